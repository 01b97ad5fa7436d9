/* gpufeed: the command-line tool. This file parses arguments and nothing
 * else; each command's work lives in its own file (synth.c, build.c,
 * inspect.c, verify.c). Exit status: 0 ok, 1 failure, 2 usage error, 130
 * interrupted by SIGINT. */
#include "cli.h"

#include "format/wds_spec.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static const char main_usage[] =
    "Usage: gpufeed COMMAND [ARGS...]\n"
    "       gpufeed --help | --version\n"
    "\n"
    "Keeps GPUs fed with training data. Commands:\n"
    "  synth    write a folder of synthetic (or photo-crop) PNG or JPEG\n"
    "           images\n"
    "  build    build a dataset (index + shards) from a folder of PNG/JPEG\n"
    "           images\n"
    "  inspect  show what a dataset holds\n"
    "  verify   read, checksum and decode every sample of a dataset\n"
    "  bench    measure the loader on a dataset or an image folder\n"
    "  index    write the sidecar indexes (DALI's wds2idx format) of\n"
    "           WebDataset tar shards\n"
    "\n"
    "'gpufeed COMMAND --help' describes a command and its options.\n"
    "Exit status: 0 success, 1 failure, 2 usage error (also an unknown\n"
    "GPUFEED_LOG value), 130 interrupted.\n"
    "Environment: GPUFEED_LOG=error|warn|info|debug (default warn),\n"
    "GPUFEED_IO=auto|uring|pread (docs/ENVIRONMENT.md lists them all).\n";

static const char synth_usage[] =
    "Usage: gpufeed synth OUT --count N [OPTIONS]\n"
    "\n"
    "Writes an ImageFolder tree OUT/class_000/img_000000.png ... of N RGB\n"
    "PNG images (or .jpg JPEG images, --format jpeg) that compress like\n"
    "photos (smooth fields plus noise).\n"
    "Image i goes to class i mod K. The output depends only on the options,\n"
    "not on the thread count.\n"
    "\n"
    "Options:\n"
    "  --count N        number of images (required)\n"
    "  --size HxW       image size (default 64x64; 'N' means NxN)\n"
    "  --sizes LO-HI    varied sizes instead: image i's height and width are\n"
    "                   each drawn uniformly from LO to HI (a function of the\n"
    "                   seed and i); with --from every photo must be at least\n"
    "                   HIxHI\n"
    "  --classes K      number of classes (default 10, or one per photo\n"
    "                   with --from)\n"
    "  --seed S         seed of the generator (default 1)\n"
    "  --format F       png (default) or jpeg: baseline JPEG, 4:2:0, files\n"
    "                   img_NNNNNN.jpg\n"
    "  --quality Q      JPEG quality 1-100 (default 90; --format jpeg only)\n"
    "  --from DIR       take random HxW crops of the PNG and JPEG photos in\n"
    "                   DIR (.png, .jpg, .jpeg)\n"
    "                   (image i crops photo i mod P; class = photo index\n"
    "                   mod K); every photo must be at least HxW (HIxHI\n"
    "                   with --sizes)\n"
    "  --threads N      worker threads (default: online cores)\n"
    "  --force          write into an existing non-empty OUT (files of the\n"
    "                   same name are replaced, nothing is deleted)\n"
    "  --quiet          no progress and no summary\n"
    "  -h, --help       this text\n";

/* The options of a source of tar shards (gf_shards_config;
 * docs/SHARDS.md). */
#define SHARDS_USAGE                                                           \
  "\n"                                                                         \
  "A SOURCE may be WebDataset tar shards: a path or URL ending in .tar,\n"     \
  "a brace pattern ('data/train-{000000..000999}.tar'), several joined by\n"   \
  "'::', or @FILE (a list file, one a line); docs/SHARDS.md. Reading them:\n"  \
  "  --shard-index M  auto (default: a shard's sidecar index x.idx where\n"    \
  "                   there is one, else a scan of its tar headers),\n"        \
  "                   require, scan, or stream (streaming mode, for remote\n"  \
  "                   shards without an index: each read front to back\n"      \
  "                   in one request, samples mixed in a shuffle buffer;\n"    \
  "                   bench only)\n"                                           \
  "  --shuffle-buffer N  stream: samples the shuffle buffer holds (default\n"  \
  "                   1000; 1: none)\n"                                        \
  "  --shuffle-bytes N stream: the buffer's bytes at most (default 256M)\n"    \
  "  --shard-threads N shards opened at once at create, or read at once\n"     \
  "                   in streaming mode (default 128 remote, cores local;\n"   \
  "                   stream: 4)\n"                                            \
  "  --image-fields F the fields an image comes from, ';'-separated\n"         \
  "                   (default jpg;jpeg;png)\n"                                \
  "  --label-field F  auto (default: cls where a sample has one, else -1),\n"  \
  "                   none, a field every sample must hold (cls, ...), or\n"   \
  "                   json:KEY (the integer at KEY of the json field)\n"       \
  "  --fields F       other fields to read with each sample, ';'-separated\n"  \
  "                   (txt;json): bench counts their bytes, inspect\n"         \
  "                   --samples shows them\n"                                  \
  "  --field-bytes N  the most bytes such a field may hold (default 64K)\n"

/* The options of a source behind a server, shared by inspect, verify and
 * bench (gf_remote_config; docs/REMOTE.md). */
#define REMOTE_USAGE                                                           \
  "\n"                                                                         \
  "A DATASET or SOURCE may be a URL: a dataset's (http://host/path,\n"         \
  "https://..., s3://bucket/prefix), or an image folder's in a bucket\n"       \
  "(s3://; plain HTTP has no listing). s3:// finds its credentials, region\n"  \
  "and\n"                                                                      \
  "endpoint as the AWS CLI does (AWS_ACCESS_KEY_ID, AWS_PROFILE,\n"            \
  "~/.aws/credentials and config, AWS_REGION, AWS_ENDPOINT_URL_S3...;\n"       \
  "docs/REMOTE.md), or from these options, named as the AWS CLI's:\n"          \
  "  --profile NAME   the shared files' profile (AWS_PROFILE)\n"               \
  "  --region REGION  (AWS_REGION; default us-east-1)\n"                       \
  "  --endpoint-url URL  an S3-compatible store (MinIO, Ceph, R2...;\n"        \
  "                   AWS_ENDPOINT_URL_S3)\n"                                  \
  "  --no-sign-request  unsigned requests, for public buckets\n"               \
  "Reading one:\n"                                                             \
  "  --max-attempts N tries of one request, the first included (default 5):\n" \
  "                   5xx, 429, resets, refused connections, stalls and\n"     \
  "                   timeouts are retried with backoff\n"                     \
  "  --retry-ms MS    the most time one request may take in tries and waits\n" \
  "                   (default 60000)\n"                                       \
  "  --connect-timeout-ms MS   (default 10000)\n"                              \
  "  --stall-ms MS    a transfer moving no byte this long is retried\n"        \
  "                   (default 15000)\n"                                       \
  "  --max-connections N   to one server (default: --fetch-requests, at\n"     \
  "                   most half of ulimit -n)\n"                               \
  "  --fetch-requests N    reads in flight ahead of decode (default 1024)\n"   \
  "  --fetch-threads N     threads moving bytes off the network (default:\n"   \
  "                   one a two cores, 1 to 8)\n"                              \
  "  --fetch-bytes SIZE    bytes read ahead, at most (default 256M, at "       \
  "least\n"                                                                    \
  "                   the batches in flight)\n"                                \
  "  --cache-dir DIR  keep fetched bytes on local disk and read them there\n"  \
  "                   later (off by default)\n"                                \
  "  --cache-dir-bytes SIZE  its limit (default 64G)\n"                        \
  "  --ca-file FILE   PEM CA bundle to verify servers with (default: the\n"    \
  "                   system's)\n"                                             \
  "  --tls-no-verify  do not verify servers' certificates (reports say so)\n"

static const char build_usage[] =
    "Usage: gpufeed build SRC OUT [OPTIONS]\n"
    "\n"
    "Builds a dataset (index.gfi + shard-NNNNNN.gfs) in OUT from the PNG\n"
    "and JPEG images under SRC: an ImageFolder tree SRC/<class>/.../*.png,\n"
    "*.jpg or *.jpeg (mixed freely; classes sorted by name, label = class\n"
    "index), or a flat folder with --labels. Each file's content must be\n"
    "what its extension says (its first bytes tell).\n"
    "An empty class folder keeps its label with no samples (the summary\n"
    "names it; torchvision's ImageFolder refuses an empty class). Hidden\n"
    "entries and sub-folders of SRC holding an index.gfi (gpufeed datasets,\n"
    "such as an earlier OUT inside SRC) are no class (the summary names the\n"
    "latter). A labels file may list each file once.\n"
    "Symbolic links: a link to an image file is followed when it resolves\n"
    "inside SRC; one leading outside SRC is refused unless --follow-symlinks\n"
    "(a symbolic link farm of a split), and links to folders are never\n"
    "followed. With --skip-bad, refused links are skipped and listed.\n"
    "Samples are written in source order, so the output is byte-identical\n"
    "whatever the thread count. The dataset is written to a temporary folder\n"
    "next to OUT and moved into place only when complete: a failed or\n"
    "interrupted build leaves OUT absent, or untouched when it existed.\n"
    "The finished folder's mode follows the umask, as its files' do.\n"
    "\n"
    "Options:\n"
    "  --labels FILE    flat-folder labels: lines 'relative/path.png LABEL'\n"
    "  --format F       gpufeed (the default: a dataset) or wds: WebDataset\n"
    "                   tar shards OUT/shard-NNNNNN.tar (a local folder),\n"
    "                   each file as it is (KEY.png, KEY.jpg, KEY.jpeg, KEY\n"
    "                   its path less the extension, other dots in the name\n"
    "                   made '_') beside its label (KEY.cls), in source\n"
    "                   order; --shard-size applies, not --codec, --level,\n"
    "                   --channels, --keep-16bit or --align; shards already\n"
    "                   in OUT are replaced only with --force\n"
    "  --json           (--format wds) the summary as one JSON object\n"
    "  --codec C        png or jpeg (source files of that kind stored as\n"
    "                   they are, after a full decode checks them; a file\n"
    "                   of the other kind is refused, named), raw (pixels),\n"
    "                   zstd (pixels + zstd), gradzstd (gradient filter +\n"
    "                   zstd; the default) or loco (lossless 8-bit coding\n"
    "                   after JPEG-LS in bands of rows, decoded on the GPU\n"
    "                   in GPU mode; a 16-bit image kept by --keep-16bit is\n"
    "                   refused, named): these four decode PNG and JPEG\n"
    "                   sources alike\n"
    "  --level N        zstd level 1-22 for zstd and gradzstd (default: the\n"
    "                   codec's own); rows per band 1-255 for loco (default\n"
    "                   8)\n"
    "  --channels C     0 (native, default), 1, 3 or 4: convert the decoded\n"
    "                   pixels (not for png or jpeg)\n"
    "  --keep-16bit     keep 16-bit images 16-bit (default: reduce to 8)\n"
    "  --threads N      worker threads (default: online cores)\n"
    "  --shard-size S   start a new shard past S bytes (default 1G;\n"
    "                   suffixes K, M, G, T are powers of 1024)\n"
    "  --align N        align each sample's extent to N bytes, a power of two\n"
    "                   up to 1M (default 1; 4096 for O_DIRECT reads)\n"
    "  --force          replace an existing dataset OUT\n"
    "  --skip-bad       skip unreadable or corrupt sources and refused\n"
    "                   symbolic links (counted and listed in the summary)\n"
    "                   instead of stopping\n"
    "  --follow-symlinks  follow symbolic links to files that lead outside\n"
    "                   SRC (never links to folders)\n"
    "  --quiet          no progress and no summary\n"
    "  -h, --help       this text\n"
    "\n"
    "Exit status: 0 built, 1 failed, 2 usage error, 130 interrupted by\n"
    "SIGINT (SIGTERM gives 1); OUT is left as it was in every failing case.\n"
    "A second SIGINT stops at once, leaving the temporary folder\n"
    "(.OUT.gftmp-PID-HOST-XXXXXX next to OUT), as a SIGKILL does: the next\n"
    "build of OUT removes it once process PID of this host has ended, and\n"
    "names any it cannot judge (its build may run, or ran on another host).\n"
    "SRC may be an image folder in a bucket, s3://bucket/prefix (listed\n"
    "once; each file read with one GET).\n"
    "SRC may be WebDataset tar shards (a path or URL ending in .tar, a\n"
    "brace pattern, '::' lists, @FILE; docs/SHARDS.md): each sample's image\n"
    "is stored, its label from its label field (--label-field), its key as\n"
    "its source path; --shard-index and --image-fields as for bench.\n"
    "OUT may be a bucket's prefix, s3://bucket/prefix: each shard is\n"
    "written in TMPDIR (a few at a time) and uploaded at once (multipart\n"
    "above 16 MiB), the index last, once every shard is in. A dataset\n"
    "there is replaced only with --force (its index deleted first). A\n"
    "failed or interrupted build aborts its multipart uploads, writes no\n"
    "index and deletes the shards it sent.\n" REMOTE_USAGE;

static const char inspect_usage[] =
    "Usage: gpufeed inspect DATASET [OPTIONS]\n"
    "\n"
    "Shows what a dataset holds: samples, classes, shards, alignment, codecs,\n"
    "stored and decoded bytes, shapes, the size histogram (min / median /\n"
    "max of height and width; shorter and longer sides by buckets) and\n"
    "labels. Reads the index only. Over WebDataset tar shards (SOURCE: see\n"
    "below): the shards, how each was read (its index, or a scan), the\n"
    "samples and members, each field and the samples holding it, what was\n"
    "left out; --samples N reads and checks the first N samples as a\n"
    "loader does (key, fields, label, image field, bytes, CRC-32).\n"
    "\n"
    "Options:\n"
    "  --json           print one JSON object instead of text; names are\n"
    "                   bytes: valid UTF-8 passes through, control\n"
    "                   characters are escaped, and each byte of invalid\n"
    "                   UTF-8 is written \\udcXX (Python's os.fsencode\n"
    "                   gives the exact bytes back)\n"
    "  --samples N      also list the first N sample records (shard, offset,\n"
    "                   length, codec, shape, label, source)\n"
    "  -h, --help       this text\n" SHARDS_USAGE REMOTE_USAGE;

static const char verify_usage[] =
    "Usage: gpufeed verify DATASET [OPTIONS]\n"
    "\n"
    "Checks the index checksum, then reads every sample (checking its\n"
    "checksum) and decodes it, checking the decoded shape against the\n"
    "index. Prints 'all N samples OK', or each bad sample and a count.\n"
    "Over WebDataset tar shards (see below): every sample read as a loader\n"
    "reads it (its members' tar headers checked against the shard's index,\n"
    "its label parsed) and its image decoded.\n"
    "\n"
    "Options:\n"
    "  --threads N      worker threads (default: online cores)\n"
    "  --quiet          print nothing when every sample is good\n"
    "  -h, --help       this text\n" SHARDS_USAGE REMOTE_USAGE "\n"
    "Exit status: 0 all good, 1 a problem was found, 2 usage error.\n";

static const char bench_usage[] =
    "Usage: gpufeed bench SOURCE [OPTIONS]\n"
    "\n"
    "Runs the loader over SOURCE (a dataset made by 'gpufeed build', a\n"
    "folder of PNG and JPEG files, or WebDataset tar shards) for a few\n"
    "epochs as a training loop would, and reports images/s, GB/s\n"
    "delivered, per-stage busy time, queue occupancy, consumer stall, CPU\n"
    "cores used, memory, the JPEG decodes by DCT scale and the share of\n"
    "their pixels decoded, and the limiting stage. The throughput counts\n"
    "the epochs after the first (which warms the page cache and fills the\n"
    "cache budget), or the only one. Each epoch's last partial batch is\n"
    "dropped (a source smaller than --batch gives no batch and is\n"
    "refused).\n"
    "\n"
    "Options:\n"
    "  --batch N        samples a batch (default 256)\n"
    "  --threads N      decode workers (default: autotune, see docs/BENCH.md)\n"
    "  --epochs N       epochs to run (default 3)\n"
    "  --batches N      stop after N batches in all\n"
    "  --device D       auto (default: GPU 0 when there is one), cpu, or a\n"
    "                   GPU index\n"
    "  --dtype T        output type: u8 (default), f32, f16, bf16\n"
    "  --layout L       nhwc (default) or nchw\n"
    "  --size HxW       crop/pad every sample to HxW (default: as stored)\n"
    "  --rrc N          training transform: RandomResizedCrop NxN (scale\n"
    "                   0.08-1, aspect 3/4-4/3, antialiased as torchvision's\n"
    "                   antialias=True) + random horizontal flip\n"
    "  --eval-crop N    evaluation transform: resize the shorter side to\n"
    "                   round(N*256/224) (256 for 224), then the central NxN\n"
    "  --resize HxW     resize every sample to HxW (aspect not kept)\n"
    "                   (--size, --rrc, --eval-crop and --resize exclude each\n"
    "                   other)\n"
    "  --mean M[,M..]   per-channel mean subtracted, in pixel units (0-255;\n"
    "                   one value for every channel), e.g. ImageNet's\n"
    "                   123.675,116.28,103.53\n"
    "  --std S[,S..]    per-channel std divided by, in pixel units, e.g.\n"
    "                   58.395,57.12,57.375\n"
    "  --channels C     0 (native, default), 1, 3 or 4\n"
    "  --cache SIZE     host cache budget for decoded samples (default 0;\n"
    "                   K, M, G suffixes)\n"
    "  --order O        shuffle (default), sequential or block\n"
    "  --io B           auto (default), uring or pread\n"
    "  --prefetch N     batch slots in flight (default: autotune, 2 to 4)\n"
    "  --max-sample SIZE  bytes a decoded sample may take (default: the\n"
    "                   largest, from the index or every file's header)\n"
    "  --labels FILE    a flat image folder's labels file\n"
    "  --jpeg-scale S   on (default) or off: JPEG samples under a resize\n"
    "                   transform decoded at a reduced DCT scale (1/2, 1/4,\n"
    "                   1/8) where the window allows, or at full scale\n"
    "                   (output identical to a full decode's); either way\n"
    "                   only the window's rows and columns are decoded\n"
    "  --gpu-decode M   auto (default), off or all: JPEG samples decoded by\n"
    "                   nvJPEG on the GPU: auto where the GPU has JPEG\n"
    "                   engines (a folder's files decoded on the CPU once\n"
    "                   first: the engines miss damage libjpeg sees), all\n"
    "                   unchecked and on the SMs elsewhere, off never\n"
    "  --gpu-decode-percent P  of those, the share (1-100) of a batch's\n"
    "                   positions that go to the GPU (default: under auto,\n"
    "                   moved by the rate batches are taken at; all: 100)\n"
    "  --gpu-decoders N nvJPEG decoders working at once, 1-8 (default 1):\n"
    "                   a decode call spends most of its time on the host,\n"
    "                   so one decoder bounds the engines' rate (2 gave\n"
    "                   1.45x decoding alone; each costs 0.5 s at create)\n"
    "  --worker-sched S batch (default) or normal: the decode workers run\n"
    "                   under SCHED_BATCH, so that the consumer's thread\n"
    "                   gets a core at once when it wakes, or as any thread\n"
    "  --step-ms X      simulate a training step of X ms a batch (a kernel\n"
    "                   on the consumer's stream on a GPU, a sleep in host\n"
    "                   mode); the stall is then the share of wall time not\n"
    "                   spent in steps\n"
    "  --plan           print the memory plan of this configuration (host\n"
    "                   and device bytes) and exit\n"
    "  --h2d-probe      first measure pinned host-to-device bandwidth and\n"
    "                   report the delivered rate against it (GPU mode)\n"
    "  --no-cache-direct  on a GPU, copy cached samples through the staging\n"
    "                   slots instead of pinning the cache and copying to\n"
    "                   the device straight from it (the default)\n"
    "  --seed S         shuffle seed (default 0)\n"
    "  --trace FILE     write a Chrome trace of the run to FILE (open it in\n"
    "                   ui.perfetto.dev): a track per worker, the consumer\n"
    "                   and the GPU copy stream\n"
    "  --trace-events N trace buffer capacity in events (default 1000000;\n"
    "                   later events are dropped and counted)\n"
    "  --json           one JSON object on stdout instead of the table (paths\n"
    "                   escaped as 'gpufeed inspect --help' says)\n"
    "  --quiet          no progress lines\n"
    "  -h, --help       this text\n" SHARDS_USAGE REMOTE_USAGE;

static const char index_usage[] =
    "Usage: gpufeed index SHARD... [OPTIONS]\n"
    "\n"
    "Writes the sidecar index of each WebDataset tar shard, in DALI's\n"
    "wds2idx v1.2 format, which gpufeed's loader (and DALI) read for random\n"
    "access: x.tar's is x.idx beside it ('.idx' appended to a name not\n"
    "ending in .tar). Only the tar headers are read, the payloads skipped.\n"
    "A SHARD is a path, an http(s):// URL or s3://bucket/key, a brace\n"
    "pattern of them (train-{000000..000999}.tar) or a '::' list of those;\n"
    "@FILE is a list file: one shard or pattern a line (blank lines and\n"
    "lines starting with '#' left out; a relative path is taken from\n"
    "FILE's folder). A shard named twice is indexed once.\n"
    "A local index is written to a temporary file beside it, synced and\n"
    "renamed into place: readers never see part of one, and a failed or\n"
    "interrupted run leaves no temporary file. Its mode follows the umask.\n"
    "In a bucket an index is one PUT. Over http(s):// nothing can be\n"
    "written: such shards need --out.\n"
    "An index (with --verify, an index and sums) already there is left as\n"
    "it is (counted as already indexed, its shard not read) unless\n"
    "--force. A shard that fails (not a tar\n"
    "file, a damaged or cut header, a compressed shard, unreadable) is\n"
    "named with the byte where it failed, and the others go on.\n"
    "\n"
    "Options:\n"
    "  --out DIR        write every index into the local folder DIR instead\n"
    "                   (made if missing), named after its shard's file name\n"
    "                   (works for every kind of SHARD)\n"
    "  --force          rewrite the indexes (and with --verify, the sums)\n"
    "                   that exist\n"
    "  --verify         also decode every image member (.jpg, .jpeg, .png)\n"
    "                   whole on the CPU and write x.sums beside x.idx: the\n"
    "                   CRC32C of each that decoded. The loader checks an\n"
    "                   image against it on every read, and under\n"
    "                   gpu_decode auto sends those that match to the GPU's\n"
    "                   JPEG engines, as it does a built dataset's (an\n"
    "                   unverified shard's JPEG files decode on the CPU). An\n"
    "                   image that does not decode is named in a warning\n"
    "                   and left out of the sums. This reads the images\n"
    "                   (not only headers), each shard by one thread\n"
    "  --threads N      shards indexed at once (default: online cores; 16\n"
    "                   when a shard is remote)\n"
    "  --json           one JSON object on stdout at the end instead of the\n"
    "                   summary: shards, indexed, skipped_existing, failed,\n"
    "                   samples, members, bytes, verified, unverified (the\n"
    "                   images --verify checked), seconds and failures (each\n"
    "                   shard and error; strings escaped as 'gpufeed inspect\n"
    "                   --help' says)\n"
    "  --quiet          no progress and no summary (errors are still\n"
    "                   printed)\n"
    "  -h, --help       this text\n"
    "\n"
    "Exit status: 0 every shard indexed (or already), 1 a shard failed, 2\n"
    "usage error, 130 interrupted by SIGINT (SIGTERM gives 1): the indexes\n"
    "written stay, and no temporary file is left.\n" REMOTE_USAGE;

/* The arguments of one command being parsed. */
typedef struct args {
  int argc;
  char **argv;
  int i;
  const char *cmd;
  bool bad;     /* a usage error was printed */
  bool no_more; /* after "--": the rest is positional */
} args;

static void usage_error(args *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void usage_error(args *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("gpufeed: ", stderr);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  if (a && a->cmd)
    fprintf(stderr, "; see 'gpufeed %s --help'\n", a->cmd);
  else
    fputs("; see 'gpufeed --help'\n", stderr);
  if (a)
    a->bad = true;
}

static bool is_option(const args *a) {
  const char *s = a->argv[a->i];
  return !a->no_more && s[0] == '-' && s[1] != '\0';
}

/* True when the current argument is option `name`. With val, the option
 * takes a value ("--name V" or "--name=V"); *val is NULL after a usage
 * error. Without val, "--name=V" is a usage error. */
static bool opt(args *a, const char *name, const char **val) {
  const char *s = a->argv[a->i];
  size_t n = strlen(name);
  if (strncmp(s, name, n) != 0 || (s[n] != '\0' && s[n] != '='))
    return false;
  if (!val) {
    if (s[n] == '=')
      usage_error(a, "option '%s' takes no value", name);
    return true;
  }
  *val = NULL;
  if (s[n] == '=') {
    *val = s + n + 1;
  } else if (a->i + 1 < a->argc) {
    *val = a->argv[++a->i];
  } else {
    usage_error(a, "option '%s' needs a value", name);
  }
  return true;
}

static void bad_value(args *a, const char *name, const char *v,
                      const char *expected) {
  usage_error(a, "invalid value '%s' for %s (expected %s)", v, name, expected);
}

static uint64_t parse_u64(args *a, const char *name, const char *v,
                          uint64_t min, uint64_t max) {
  if (!v)
    return 0;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  if (v[0] < '0' || v[0] > '9' || *end || errno || x < min || x > max) {
    char want[96];
    snprintf(want, sizeof want, "an integer from %llu to %llu",
             (unsigned long long)min, (unsigned long long)max);
    bad_value(a, name, v, want);
    return 0;
  }
  return x;
}

/* Byte sizes: digits with an optional K, M, G or T suffix (powers of 1024),
 * optionally followed by "iB" or "B". */
static uint64_t parse_size(args *a, const char *name, const char *v,
                           uint64_t min, uint64_t max) {
  if (!v)
    return 0;
  char *end;
  errno = 0;
  unsigned long long x = strtoull(v, &end, 10);
  unsigned shift = 0;
  bool ok = v[0] >= '0' && v[0] <= '9' && !errno;
  if (ok && *end) {
    static const char units[] = "KMGT";
    const char *u = strchr(units, toupper((unsigned char)*end));
    ok = u != NULL;
    if (ok) {
      shift = 10u * (unsigned)(u - units + 1);
      end++;
      ok = !*end || !strcmp(end, "B") || !strcmp(end, "iB");
    }
  }
  if (ok && shift && x > (UINT64_MAX >> shift))
    ok = false;
  uint64_t r = ok ? (uint64_t)x << shift : 0;
  if (!ok || r < min || r > max) {
    char want[128];
    snprintf(want, sizeof want,
             "a size from %llu to %llu bytes, with an optional K, M, G or T "
             "suffix",
             (unsigned long long)min, (unsigned long long)max);
    bad_value(a, name, v, want);
    return 0;
  }
  return r;
}

/* Floating-point values: a finite decimal number from min to max, nothing
 * before or after it. NaN and the infinities are refused by name: NaN
 * passes any range check ("nan < 0" and "nan > max" are both false). */
static double parse_double(args *a, const char *name, const char *v, double min,
                           double max, const char *unit) {
  if (!v)
    return 0;
  char *end = NULL;
  errno = 0;
  double x = strtod(v, &end);
  bool ok = end != v && !*end && !isspace((unsigned char)v[0]) && isfinite(x) &&
            errno != ERANGE && x >= min && x <= max;
  if (!ok) {
    char want[128];
    snprintf(want, sizeof want, "a finite number of %s from %g to %g", unit,
             min, max);
    bad_value(a, name, v, want);
    return 0;
  }
  return x;
}

/* "LO-HI" (or "N": N-N), 1 <= LO <= HI <= 65535. */
static void parse_range(args *a, const char *name, const char *v, uint32_t *lo,
                        uint32_t *hi) {
  if (!v)
    return;
  char *end;
  errno = 0;
  unsigned long l = strtoul(v, &end, 10), h = l;
  bool ok = v[0] >= '1' && v[0] <= '9' && !errno;
  if (ok && *end == '-') {
    const char *p = end + 1;
    h = strtoul(p, &end, 10);
    ok = p[0] >= '1' && p[0] <= '9' && !errno;
  }
  if (!ok || *end || l < 1 || h < l || h > GF_LIMIT_DEFAULT_DIM) {
    bad_value(a, name, v, "LO-HI with 1 <= LO <= HI <= 65535");
    return;
  }
  *lo = (uint32_t)l;
  *hi = (uint32_t)h;
}

static void parse_hw_named(args *a, const char *name, const char *v,
                           uint32_t *h, uint32_t *w) {
  if (!v)
    return;
  char *end;
  errno = 0;
  unsigned long hh = strtoul(v, &end, 10), ww = hh;
  bool ok = v[0] >= '1' && v[0] <= '9' && !errno;
  if (ok && (*end == 'x' || *end == 'X')) {
    const char *p = end + 1;
    ww = strtoul(p, &end, 10);
    ok = p[0] >= '1' && p[0] <= '9' && !errno;
  }
  if (!ok || *end || hh < 1 || ww < 1 || hh > GF_LIMIT_DEFAULT_DIM ||
      ww > GF_LIMIT_DEFAULT_DIM) {
    bad_value(a, name, v, "HxW with sides from 1 to 65535");
    return;
  }
  *h = (uint32_t)hh;
  *w = (uint32_t)ww;
}

static void parse_hw(args *a, const char *v, uint32_t *h, uint32_t *w) {
  parse_hw_named(a, "--size", v, h, w);
}

/* Up to 4 comma-separated finite floats ("123.7,116.3,103.5"); one value
 * applies to every channel. */
static void parse_floats4(args *a, const char *name, const char *v, double min,
                          float out[4]) {
  if (!v)
    return;
  char buf[256];
  if (strlen(v) >= sizeof buf) {
    bad_value(a, name, v, "1 to 4 comma-separated numbers");
    return;
  }
  snprintf(buf, sizeof buf, "%s", v);
  int n = 0;
  char *save = NULL;
  for (char *t = strtok_r(buf, ",", &save); t && !a->bad;
       t = strtok_r(NULL, ",", &save)) {
    if (n == 4) {
      bad_value(a, name, v, "1 to 4 comma-separated numbers");
      return;
    }
    out[n++] = (float)parse_double(a, name, t, min, 1e6, "pixel units");
  }
  if (a->bad)
    return;
  if (n == 0 || v[strlen(v) - 1] == ',' || strstr(v, ",,")) {
    bad_value(a, name, v, "1 to 4 comma-separated numbers");
    return;
  }
  for (int c = n; c < 4; c++)
    out[c] = n == 1 ? out[0] : 0;
}

/* Handles what every command shares: -h/--help, "--", unknown options and
 * too many positionals. Returns true when the argument was consumed. */
static bool common_arg(args *a, const char **pos, int max_pos, int *npos,
                       bool *help) {
  const char *s = a->argv[a->i];
  if (!a->no_more && strcmp(s, "--") == 0) {
    a->no_more = true;
    return true;
  }
  if (is_option(a)) {
    if (strcmp(s, "-h") == 0 || strcmp(s, "--help") == 0) {
      *help = true;
      return true;
    }
    return false;
  }
  if (*npos >= max_pos) {
    usage_error(a, "unexpected argument '%s' for %s", s, a->cmd);
    return true;
  }
  pos[(*npos)++] = s;
  return true;
}

/* A path argument (named `what` in the message) may not be empty: "" names
 * no file, and the library would answer with its own function's name. */
static void check_path(args *a, const char *what, const char *v) {
  if (!a->bad && v && !*v)
    usage_error(a, "%s is an empty string (expected a path)", what);
}

static void unknown_option(args *a) {
  usage_error(a, "unknown option '%s' for %s", a->argv[a->i], a->cmd);
}

static void parse_synth(args *a, gfc_synth_opts *o, bool *help) {
  const char *pos[1] = {NULL};
  int npos = 0;
  const char *v;
  bool have_count = false, have_size = false, have_quality = false;
  *o = (gfc_synth_opts){.height = 64, .width = 64, .seed = 1, .quality = 90};
  for (a->i = 0; a->i < a->argc && !a->bad && !*help; a->i++) {
    if (common_arg(a, pos, 1, &npos, help))
      continue;
    if (opt(a, "--count", &v)) {
      o->count = parse_u64(a, "--count", v, 1, UINT32_MAX);
      have_count = true;
    } else if (opt(a, "--size", &v)) {
      parse_hw(a, v, &o->height, &o->width);
      have_size = true;
    } else if (opt(a, "--sizes", &v)) {
      parse_range(a, "--sizes", v, &o->size_lo, &o->size_hi);
    } else if (opt(a, "--classes", &v)) {
      o->classes = (uint32_t)parse_u64(a, "--classes", v, 1, 1000);
    } else if (opt(a, "--seed", &v)) {
      o->seed = parse_u64(a, "--seed", v, 0, UINT64_MAX);
    } else if (opt(a, "--format", &v)) {
      if (v && strcmp(v, "png") == 0)
        o->format = GFC_SYNTH_PNG;
      else if (v && strcmp(v, "jpeg") == 0)
        o->format = GFC_SYNTH_JPEG;
      else
        bad_value(a, "--format", v, "png or jpeg");
    } else if (opt(a, "--quality", &v)) {
      o->quality = (int)parse_u64(a, "--quality", v, 1, 100);
      have_quality = true;
    } else if (opt(a, "--from", &v)) {
      o->from = v;
    } else if (opt(a, "--threads", &v)) {
      o->threads = (unsigned)parse_u64(a, "--threads", v, 1, 1024);
    } else if (opt(a, "--force", NULL)) {
      o->force = true;
    } else if (opt(a, "--quiet", NULL)) {
      o->quiet = true;
    } else {
      unknown_option(a);
    }
  }
  if (a->bad || *help)
    return;
  if (npos < 1)
    usage_error(a, "synth needs the output folder OUT");
  else if (!have_count)
    usage_error(a, "synth needs --count N");
  else if (have_size && o->size_lo)
    usage_error(a, "--size and --sizes exclude each other");
  else if (have_quality && o->format != GFC_SYNTH_JPEG)
    usage_error(a, "--quality applies to --format jpeg only");
  if (o->size_lo) {
    o->height = o->size_hi; /* the largest image: buffers, photo check */
    o->width = o->size_hi;
  }
  o->out = pos[0];
  check_path(a, "OUT", o->out);
  check_path(a, "the value of --from", o->from);
}

static bool remote_arg(args *a, gf_remote_config *r);
static bool shards_arg(args *a, gf_shards_config *s);
static void shards_check(args *a, const gf_shards_config *s, bool loads);

static void parse_build(args *a, gfc_build_opts *o, bool *help) {
  const char *pos[2] = {NULL, NULL};
  int npos = 0;
  const char *v;
  bool channels_set = false, pixels_set = false;
  const char *level_arg = NULL;
  *o = (gfc_build_opts){.codec = GF_CODEC_GRADZSTD,
                        .alignment = 1,
                        .shard_size = 1ull << 30,
                        .remote = GF_REMOTE_CONFIG_INIT,
                        .shards = GF_SHARDS_CONFIG_INIT};
  for (a->i = 0; a->i < a->argc && !a->bad && !*help; a->i++) {
    if (common_arg(a, pos, 2, &npos, help) || remote_arg(a, &o->remote) ||
        shards_arg(a, &o->shards))
      continue;
    if (opt(a, "--labels", &v)) {
      o->labels = v;
    } else if (opt(a, "--format", &v)) {
      if (v && strcmp(v, "gpufeed") == 0)
        o->format = GFC_BUILD_FORMAT_GPUFEED;
      else if (v && strcmp(v, "wds") == 0)
        o->format = GFC_BUILD_FORMAT_WDS;
      else
        bad_value(a, "--format", v, "gpufeed or wds");
    } else if (opt(a, "--json", NULL)) {
      o->json = true;
    } else if (opt(a, "--codec", &v)) {
      pixels_set = true;
      if (v && (o->codec = gf_codec_parse(v)) < 0)
        bad_value(a, "--codec", v, "png, jpeg, raw, zstd, gradzstd or loco");
    } else if (opt(a, "--level", &v)) {
      level_arg = v; /* parsed below: its range depends on the codec */
    } else if (opt(a, "--channels", &v)) {
      o->channels = (uint32_t)parse_u64(a, "--channels", v, 0, 4);
      if (!a->bad && o->channels == 2)
        bad_value(a, "--channels", v, "0, 1, 3 or 4");
      channels_set = true;
    } else if (opt(a, "--keep-16bit", NULL)) {
      o->keep_16bit = true;
      pixels_set = true;
    } else if (opt(a, "--threads", &v)) {
      o->threads = (unsigned)parse_u64(a, "--threads", v, 1, 1024);
    } else if (opt(a, "--shard-size", &v)) {
      o->shard_size = parse_size(a, "--shard-size", v, 1, 1ull << 50);
    } else if (opt(a, "--align", &v)) {
      o->alignment = (uint32_t)parse_size(a, "--align", v, 1, 1u << 20);
      pixels_set = true;
      if (!a->bad && (o->alignment & (o->alignment - 1)))
        bad_value(a, "--align", v, "a power of two up to 1M");
    } else if (opt(a, "--force", NULL)) {
      o->force = true;
    } else if (opt(a, "--skip-bad", NULL)) {
      o->skip_bad = true;
    } else if (opt(a, "--follow-symlinks", NULL)) {
      o->follow_symlinks = true;
    } else if (opt(a, "--quiet", NULL)) {
      o->quiet = true;
    } else {
      unknown_option(a);
    }
  }
  if (a->bad || *help)
    return;
  if (npos < 2) {
    usage_error(a, "build needs SRC and OUT");
    return;
  }
  shards_check(a, &o->shards, false);
  o->src = pos[0];
  o->out = pos[1];
  check_path(a, "SRC", o->src);
  check_path(a, "OUT", o->out);
  check_path(a, "the value of --labels", o->labels);
  if (a->bad)
    return;
  if (o->src && gf_wds_spec_claims(o->src) &&
      (o->labels || o->format == GFC_BUILD_FORMAT_WDS)) {
    usage_error(a, o->labels ? "--labels is for a folder of images: tar "
                               "shards take their labels from a field "
                               "(--label-field)"
                             : "the source is WebDataset shards already: "
                               "--format wds writes shards from a folder");
    return;
  }
  if (o->format == GFC_BUILD_FORMAT_WDS) {
    if (pixels_set || level_arg || channels_set)
      usage_error(a, "--codec, --level, --channels, --keep-16bit and --align "
                     "apply to --format gpufeed only (--format wds stores "
                     "the files as they are)");
    return;
  }
  if (o->json) {
    usage_error(a, "--json applies to --format wds only");
    return;
  }
  bool pixels = o->codec != GF_CODEC_PNG && o->codec != GF_CODEC_JPEG;
  bool zstd = o->codec == GF_CODEC_ZSTD || o->codec == GF_CODEC_GRADZSTD;
  if (level_arg && !zstd && o->codec != GF_CODEC_LOCO)
    usage_error(a, "--level applies to the zstd, gradzstd and loco codecs "
                   "only");
  else if (level_arg)
    o->level = (int)parse_u64(a, "--level", level_arg, 1, zstd ? 22 : 255);
  if (a->bad)
    return;
  if (channels_set && o->channels && !pixels)
    usage_error(a, "--channels cannot convert png or jpeg samples (stored "
                   "as they are); use --codec raw, zstd, gradzstd or loco");
}

/* The S3 options' settings (one command a process). */
static gf_s3_config cli_s3 = GF_S3_CONFIG_INIT;

/* One option of a source behind a server, if a's current one is (then
 * true). */
static int pick(args *a, const char *name, const char *v,
                const char *const *names, int n, const char *accepted);

static bool shards_arg(args *a, gf_shards_config *s) {
  static const char *const modes[] = {"auto", "require", "scan", "stream"};
  const char *v;
  if (opt(a, "--shard-index", &v))
    s->index = (uint32_t)pick(a, "--shard-index", v, modes, 4,
                              "auto, require, scan or stream");
  else if (opt(a, "--shuffle-buffer", &v))
    s->shuffle = (uint32_t)parse_size(a, "--shuffle-buffer", v, 1, 1u << 24);
  else if (opt(a, "--shuffle-bytes", &v))
    s->shuffle_bytes = parse_size(a, "--shuffle-bytes", v, 1, 1ull << 44);
  else if (opt(a, "--shard-threads", &v))
    s->threads = (uint32_t)parse_size(a, "--shard-threads", v, 1, 4096);
  else if (opt(a, "--image-fields", &v))
    s->image_fields = v;
  else if (opt(a, "--label-field", &v))
    s->label = v;
  else if (opt(a, "--fields", &v))
    s->fields = v;
  else if (opt(a, "--field-bytes", &v))
    s->field_bytes = parse_size(a, "--field-bytes", v, 1, 1ull << 40);
  else
    return false;
  return true;
}

/* The shard options together, once parsed: streaming mode only where a
 * loader runs (`loads`: bench; inspect, verify and build read shards by
 * index or scan), its shuffle options only with it. */
static void shards_check(args *a, const gf_shards_config *s, bool loads) {
  if (a->bad)
    return;
  if (s->index == GF_SHARDS_INDEX_STREAM && !loads)
    usage_error(a,
                "--shard-index stream is for loading (gpufeed bench, "
                "the C API, Python): %s reads shards by their sidecar "
                "indexes or a scan of their headers (--shard-index auto, "
                "require or scan; `gpufeed index` writes indexes)",
                a->cmd);
  else if (s->index != GF_SHARDS_INDEX_STREAM &&
           (s->shuffle || s->shuffle_bytes))
    usage_error(a, "--shuffle-buffer and --shuffle-bytes apply to "
                   "--shard-index stream only (with an index, --order "
                   "shuffles every sample)");
}

static bool remote_arg(args *a, gf_remote_config *r) {
  const char *v;
  if (opt(a, "--no-sign-request", NULL))
    cli_s3.anonymous = 1;
  else if (opt(a, "--endpoint-url", &v))
    cli_s3.endpoint_url = v;
  else if (opt(a, "--region", &v))
    cli_s3.region = v;
  else if (opt(a, "--profile", &v))
    cli_s3.profile = v;
  else if (opt(a, "--tls-no-verify", NULL))
    r->tls_no_verify = 1;
  else if (opt(a, "--ca-file", &v))
    r->ca_file = v;
  else if (opt(a, "--max-attempts", &v))
    r->max_attempts = (uint32_t)parse_u64(a, "--max-attempts", v, 1, 100);
  else if (opt(a, "--retry-ms", &v))
    r->retry_ms = (uint32_t)parse_u64(a, "--retry-ms", v, 1, UINT32_MAX);
  else if (opt(a, "--connect-timeout-ms", &v))
    r->connect_timeout_ms =
        (uint32_t)parse_u64(a, "--connect-timeout-ms", v, 1, UINT32_MAX);
  else if (opt(a, "--stall-ms", &v))
    r->stall_ms = (uint32_t)parse_u64(a, "--stall-ms", v, 1, UINT32_MAX);
  else if (opt(a, "--max-connections", &v))
    r->max_connections =
        (uint32_t)parse_u64(a, "--max-connections", v, 1, 4096);
  else if (opt(a, "--fetch-requests", &v))
    r->fetch_requests = (uint32_t)parse_u64(a, "--fetch-requests", v, 1, 65536);
  else if (opt(a, "--fetch-threads", &v))
    r->fetch_threads = (uint32_t)parse_u64(a, "--fetch-threads", v, 1, 64);
  else if (opt(a, "--fetch-bytes", &v))
    r->fetch_bytes = parse_size(a, "--fetch-bytes", v, 1, 1ull << 50);
  else if (opt(a, "--cache-dir", &v))
    r->cache_dir = v;
  else if (opt(a, "--cache-dir-bytes", &v))
    r->cache_dir_bytes = parse_size(a, "--cache-dir-bytes", v, 1, 1ull << 60);
  else
    return false;
  if (cli_s3.anonymous || cli_s3.endpoint_url || cli_s3.region ||
      cli_s3.profile)
    r->s3 = &cli_s3;
  return true;
}

static void parse_inspect(args *a, gfc_inspect_opts *o, bool *help) {
  const char *pos[1] = {NULL};
  int npos = 0;
  const char *v;
  *o = (gfc_inspect_opts){.remote = GF_REMOTE_CONFIG_INIT,
                          .shards = GF_SHARDS_CONFIG_INIT};
  for (a->i = 0; a->i < a->argc && !a->bad && !*help; a->i++) {
    if (common_arg(a, pos, 1, &npos, help) || remote_arg(a, &o->remote) ||
        shards_arg(a, &o->shards))
      continue;
    if (opt(a, "--json", NULL))
      o->json = true;
    else if (opt(a, "--samples", &v))
      o->samples = parse_u64(a, "--samples", v, 0, UINT64_MAX);
    else
      unknown_option(a);
  }
  if (!a->bad && !*help && npos < 1)
    usage_error(a, "inspect needs the DATASET folder");
  shards_check(a, &o->shards, false);
  o->dataset = pos[0];
  check_path(a, "DATASET", o->dataset);
}

static void parse_verify(args *a, gfc_verify_opts *o, bool *help) {
  const char *pos[1] = {NULL};
  int npos = 0;
  const char *v;
  *o = (gfc_verify_opts){.remote = GF_REMOTE_CONFIG_INIT,
                         .shards = GF_SHARDS_CONFIG_INIT};
  for (a->i = 0; a->i < a->argc && !a->bad && !*help; a->i++) {
    if (common_arg(a, pos, 1, &npos, help) || remote_arg(a, &o->remote) ||
        shards_arg(a, &o->shards))
      continue;
    if (opt(a, "--threads", &v))
      o->threads = (unsigned)parse_u64(a, "--threads", v, 1, 1024);
    else if (opt(a, "--quiet", NULL))
      o->quiet = true;
    else
      unknown_option(a);
  }
  if (!a->bad && !*help && npos < 1)
    usage_error(a, "verify needs the DATASET folder");
  shards_check(a, &o->shards, false);
  o->dataset = pos[0];
  check_path(a, "DATASET", o->dataset);
}

static int pick(args *a, const char *name, const char *v,
                const char *const *names, int n, const char *expected) {
  if (!v)
    return 0;
  for (int k = 0; k < n; k++)
    if (strcmp(v, names[k]) == 0)
      return k;
  bad_value(a, name, v, expected);
  return 0;
}

static void parse_bench(args *a, gfc_bench_opts *o, bool *help) {
  const char *pos[1] = {NULL};
  int npos = 0;
  const char *v;
  static const char *const dtypes[] = {"u8", "f32", "f16", "bf16"};
  static const char *const layouts[] = {"nhwc", "nchw"};
  static const char *const orders[] = {"shuffle", "sequential", "block"};
  static const char *const ios[] = {"auto", "uring", "pread"};
  *o = (gfc_bench_opts){.batch = 256,
                        .epochs = 3,
                        .device = GF_DEVICE_AUTO,
                        .trace_events = 1000000,
                        .remote = GF_REMOTE_CONFIG_INIT,
                        .shards = GF_SHARDS_CONFIG_INIT};
  int shape_opts = 0;
  for (a->i = 0; a->i < a->argc && !a->bad && !*help; a->i++) {
    if (common_arg(a, pos, 1, &npos, help) || remote_arg(a, &o->remote) ||
        shards_arg(a, &o->shards))
      continue;
    if (opt(a, "--batch", &v)) {
      o->batch = (uint32_t)parse_u64(a, "--batch", v, 1, 1u << 20);
    } else if (opt(a, "--threads", &v)) {
      o->threads = (uint32_t)parse_u64(a, "--threads", v, 1, 1024);
    } else if (opt(a, "--epochs", &v)) {
      o->epochs = (uint32_t)parse_u64(a, "--epochs", v, 1, 1000000);
    } else if (opt(a, "--batches", &v)) {
      o->max_batches = parse_u64(a, "--batches", v, 1, UINT64_MAX);
    } else if (opt(a, "--device", &v)) {
      if (v && strcmp(v, "auto") == 0)
        o->device = GF_DEVICE_AUTO;
      else if (v && strcmp(v, "cpu") == 0)
        o->device = GF_DEVICE_CPU;
      else
        o->device = (int32_t)parse_u64(a, "--device", v, 0, 1023);
    } else if (opt(a, "--dtype", &v)) {
      o->dtype =
          (uint32_t)pick(a, "--dtype", v, dtypes, 4, "u8, f32, f16 or bf16");
    } else if (opt(a, "--layout", &v)) {
      o->layout = (uint32_t)pick(a, "--layout", v, layouts, 2, "nhwc or nchw");
    } else if (opt(a, "--size", &v)) {
      parse_hw(a, v, &o->out_h, &o->out_w);
      shape_opts++;
    } else if (opt(a, "--rrc", &v)) {
      o->out_h = o->out_w = (uint32_t)parse_u64(a, "--rrc", v, 1, 65535);
      o->resize = GF_RESIZE_RANDOM_RESIZED_CROP;
      o->hflip = true;
      shape_opts++;
    } else if (opt(a, "--eval-crop", &v)) {
      o->out_h = o->out_w = (uint32_t)parse_u64(a, "--eval-crop", v, 1, 57343);
      o->resize = GF_RESIZE_SHORTER_CENTER_CROP;
      /* torchvision's evaluation recipe: Resize(256) + CenterCrop(224),
       * the same ratio at any N. */
      o->resize_size = (uint32_t)(((uint64_t)o->out_h * 256 + 112) / 224);
      shape_opts++;
    } else if (opt(a, "--resize", &v)) {
      parse_hw_named(a, "--resize", v, &o->out_h, &o->out_w);
      o->resize = GF_RESIZE_EXACT;
      shape_opts++;
    } else if (opt(a, "--mean", &v)) {
      parse_floats4(a, "--mean", v, -1e6, o->mean);
    } else if (opt(a, "--std", &v)) {
      parse_floats4(a, "--std", v, 1e-6, o->std);
    } else if (opt(a, "--channels", &v)) {
      o->channels = (uint32_t)parse_u64(a, "--channels", v, 0, 4);
      if (!a->bad && o->channels == 2)
        bad_value(a, "--channels", v, "0, 1, 3 or 4");
    } else if (opt(a, "--cache", &v)) {
      o->cache_bytes = parse_size(a, "--cache", v, 0, 1ull << 50);
    } else if (opt(a, "--order", &v)) {
      o->order = (uint32_t)pick(a, "--order", v, orders, 3,
                                "shuffle, sequential or block");
    } else if (opt(a, "--io", &v)) {
      o->io = (uint32_t)pick(a, "--io", v, ios, 3, "auto, uring or pread");
    } else if (opt(a, "--prefetch", &v)) {
      o->prefetch = (uint32_t)parse_u64(a, "--prefetch", v, 1, 64);
    } else if (opt(a, "--max-sample", &v)) {
      o->max_sample_bytes = parse_size(a, "--max-sample", v, 1, 1ull << 32);
    } else if (opt(a, "--labels", &v)) {
      o->labels = v;
    } else if (opt(a, "--step-ms", &v)) {
      o->step_ms = parse_double(a, "--step-ms", v, 0, 1e6, "milliseconds");
    } else if (opt(a, "--seed", &v)) {
      o->seed = parse_u64(a, "--seed", v, 0, UINT64_MAX);
    } else if (opt(a, "--trace", &v)) {
      o->trace = v;
      if (v && !*v)
        bad_value(a, "--trace", v, "a file name");
    } else if (opt(a, "--trace-events", &v)) {
      o->trace_events = parse_u64(a, "--trace-events", v, 1, 1ull << 26);
    } else if (opt(a, "--plan", NULL)) {
      o->plan = true;
    } else if (opt(a, "--h2d-probe", NULL)) {
      o->h2d_probe = true;
    } else if (opt(a, "--no-cache-direct", NULL)) {
      o->no_cache_direct = true;
    } else if (opt(a, "--jpeg-scale", &v)) {
      static const char *const onoff[] = {"on", "off"};
      o->jpeg_scale_off =
          pick(a, "--jpeg-scale", v, onoff, 2, "on or off") == 1;
    } else if (opt(a, "--gpu-decode", &v)) {
      static const char *const gd[] = {"auto", "off", "all"};
      o->gpu_decode =
          (uint32_t)pick(a, "--gpu-decode", v, gd, 3, "auto, off or all");
    } else if (opt(a, "--gpu-decode-percent", &v)) {
      o->gpu_decode_percent =
          (uint32_t)parse_u64(a, "--gpu-decode-percent", v, 1, 100);
    } else if (opt(a, "--gpu-decoders", &v)) {
      o->gpu_decoders =
          (uint32_t)parse_u64(a, "--gpu-decoders", v, 1, GF_GPU_DECODERS_MAX);
    } else if (opt(a, "--worker-sched", &v)) {
      static const char *const ws[] = {"batch", "normal"};
      o->worker_sched =
          (uint32_t)pick(a, "--worker-sched", v, ws, 2, "batch or normal");
    } else if (opt(a, "--json", NULL)) {
      o->json = true;
    } else if (opt(a, "--quiet", NULL)) {
      o->quiet = true;
    } else {
      unknown_option(a);
    }
  }
  if (!a->bad && !*help && shape_opts > 1)
    usage_error(a, "--size, --rrc, --eval-crop and --resize exclude each "
                   "other");
  if (!a->bad && !*help && npos < 1)
    usage_error(a, "bench needs a SOURCE (a dataset or a folder of PNG "
                   "and JPEG files)");
  shards_check(a, &o->shards, true);
  if (!a->bad && !*help && o->shards.index == GF_SHARDS_INDEX_STREAM &&
      !o->out_h && !o->max_sample_bytes)
    usage_error(a, "--shard-index stream sizes its buffers before any "
                   "sample is read: give an output size (--size, --rrc, "
                   "--eval-crop or --resize) or --max-sample");
  o->source = pos[0];
  check_path(a, "SOURCE", o->source);
  check_path(a, "the value of --labels", o->labels);
}

/* pos: room for every argument (SHARD... has no bound). */
static void parse_index(args *a, gfc_index_opts *o, const char **pos,
                        bool *help) {
  int npos = 0;
  const char *v;
  *o = (gfc_index_opts){.remote = GF_REMOTE_CONFIG_INIT};
  for (a->i = 0; a->i < a->argc && !a->bad && !*help; a->i++) {
    if (common_arg(a, pos, a->argc, &npos, help) || remote_arg(a, &o->remote))
      continue;
    if (opt(a, "--out", &v))
      o->out = v;
    else if (opt(a, "--force", NULL))
      o->force = true;
    else if (opt(a, "--verify", NULL))
      o->verify = true;
    else if (opt(a, "--threads", &v))
      o->threads = (unsigned)parse_u64(a, "--threads", v, 1, 1024);
    else if (opt(a, "--json", NULL))
      o->json = true;
    else if (opt(a, "--quiet", NULL))
      o->quiet = true;
    else
      unknown_option(a);
  }
  if (!a->bad && !*help && npos < 1)
    usage_error(a, "index needs at least one SHARD");
  for (int k = 0; k < npos && !a->bad; k++)
    check_path(a, "SHARD", pos[k]);
  check_path(a, "the value of --out", o->out);
  o->shards = pos;
  o->nshards = (size_t)npos;
}

/* Each command: parse, then either print its help, report a usage error,
 * or run it. Returns the exit status. */
#define RUN_COMMAND(kind, usage)                                               \
  static int run_##kind(args *a) {                                             \
    gfc_##kind##_opts o;                                                       \
    bool help = false;                                                         \
    parse_##kind(a, &o, &help);                                                \
    if (help) {                                                                \
      fputs(usage, stdout);                                                    \
      return GFC_EXIT_OK;                                                      \
    }                                                                          \
    if (a->bad)                                                                \
      return GFC_EXIT_USAGE;                                                   \
    if (!gfc_env_ok(a->cmd))                                                   \
      return GFC_EXIT_USAGE;                                                   \
    return gfc_##kind(&o);                                                     \
  }
RUN_COMMAND(synth, synth_usage)
RUN_COMMAND(build, build_usage)
RUN_COMMAND(inspect, inspect_usage)
RUN_COMMAND(verify, verify_usage)
RUN_COMMAND(bench, bench_usage)

/* index: RUN_COMMAND's steps, with room for its SHARD arguments. */
static int run_index(args *a) {
  gfc_index_opts o;
  bool help = false;
  const char **pos = calloc((size_t)a->argc + 1, sizeof *pos);
  if (!pos) {
    fputs("gpufeed index: out of memory\n", stderr);
    return GFC_EXIT_FAIL;
  }
  parse_index(a, &o, pos, &help);
  int status;
  if (help) {
    fputs(index_usage, stdout);
    status = GFC_EXIT_OK;
  } else if (a->bad || !gfc_env_ok(a->cmd)) {
    status = GFC_EXIT_USAGE;
  } else {
    status = gfc_index(&o);
  }
  free(pos);
  return status;
}

static const struct command {
  const char *name;
  int (*run)(args *a);
} commands[] = {
    {"synth", run_synth},   {"build", run_build}, {"inspect", run_inspect},
    {"verify", run_verify}, {"bench", run_bench}, {"index", run_index},
};

int main(int argc, char **argv) {
  int status = GFC_EXIT_USAGE;
  const char *cmd = argc >= 2 ? argv[1] : NULL;
  const struct command *c = NULL;
  for (size_t k = 0; cmd && k < sizeof commands / sizeof commands[0]; k++)
    if (strcmp(cmd, commands[k].name) == 0)
      c = &commands[k];
  if (!cmd) {
    usage_error(NULL, "missing command");
  } else if (c) {
    args a = {argc - 2, argv + 2, 0, c->name, false, false};
    status = c->run(&a);
  } else if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 ||
             strcmp(cmd, "help") == 0) {
    fputs(main_usage, stdout);
    status = GFC_EXIT_OK;
  } else if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
    printf("gpufeed %s\n", gf_version_string());
    status = GFC_EXIT_OK;
  } else if (cmd[0] == '-') {
    usage_error(NULL, "unknown option '%s'", cmd);
  } else {
    usage_error(NULL, "unknown command '%s'", cmd);
  }
  /* Output that could not be written (a full disk, a closed pipe) is a
   * failure, not a success. */
  if (fflush(stdout) != 0 && status == GFC_EXIT_OK) {
    fprintf(stderr, "gpufeed: cannot write the output\n");
    status = GFC_EXIT_FAIL;
  }
  return status;
}
