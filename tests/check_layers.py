#!/usr/bin/python3
"""Checks that every dependency inside the library points down.

Usage: check_layers.py SOURCE_DIR [OBJECTS]

OBJECTS: the library's object files, separated by ';' (as CMake's
$<TARGET_OBJECTS:...> of gpufeed_obj and gpufeed_kernels give them).

The layers, lowest first (also written in lib/CMakeLists.txt):

    common                 errors, logging, limits, CRC32C, scratch
    decode  io             peers: each uses only common (io: storages and
                           the reader)
    format                 the dataset format and folder listings, read
                           through io's storages
    xform                  the transform contract and its CPU reference
                           (which uses decode's gradient unfilter)
    kernels                the CUDA kernels: only the xform contract
    gpu                    the device pool and the loader's GPU stage
    pipeline               the loader and what only it uses

include/gpufeed.h (the public API) may be included anywhere.

It fails on
  (a) an #include "..." in lib/ or kernels/ that goes against that order
      (a folder including one it may not);
  (b) headers whose includes form a loop, and two source files that each
      include the other's own header (the first include, of its folder);
  (c) with the built object files: a cycle of calls between object files
      (A calls a function defined in B and B, directly or through others,
      one defined in A, from nm's defined and undefined symbols), and a
      call from an object into a folder its layer may not use, or into a
      file only its own folder may call (FOLDER_PRIVATE: the codecs behind
      decode/codec.c, the backends behind io/reader.c);
  (d) a function declared in a header written for one audience (AUDIENCE:
      the loader's GPU stage, the CLI bench's CUDA helpers) that no file of
      that audience calls: what only tests use belongs in tests/;
  (e) a dependency's header (liburing.h, png.h, jpeglib.h, zstd.h, curl.h,
      archive.h, the CUDA runtime, NVTX) included outside its one owner
      (SYSTEM_HEADER_OWNERS).
Exit 0 pass, 1 fail.
"""
import os
import re
import subprocess
import sys

# Folder -> the folders its files may include or call (itself included).
ALLOWED = {
    "common": {"common"},
    "format": {"common", "io", "format"},
    "decode": {"common", "decode"},
    "io": {"common", "io"},
    "xform": {"common", "decode", "xform"},
    "kernels": {"xform", "kernels", "decode"},
    "gpu": {"common", "xform", "kernels", "gpu"},
    "pipeline": {"common", "format", "decode", "io", "xform", "gpu",
                 "pipeline"},
}

# Files that only their own folder may call: the codecs behind the decode
# dispatcher (codec.c) and the I/O backends behind the reader (reader.c),
# and what those share, and the HTTP storage's parts behind its table
# (storage_http.c). Whoever else needs one of them goes through the
# dispatcher. (jpeg.c is not among them: the loader calls its window
# decode, which the dispatcher has no call for.)
FOLDER_PRIVATE = {"lib/decode/png.c", "lib/decode/zstd.c", "lib/decode/opts.c",
                  "lib/io/uring.c", "lib/io/pread.c", "lib/io/slot.c",
                  "lib/io/storage_http_engine.c", "lib/io/storage_http_xfer.c",
                  "lib/io/storage_http_url.c", "lib/io/storage_http_reply.c",
                  "lib/io/storage_http_retry.c"}

# Internal headers written for one audience: every function one declares
# must be called from there, so that a call only the tests use does not
# ship in the library (tests keep such helpers in tests/). The header's own
# implementation files (<stem>_*.c beside it) do not count.
AUDIENCE = {
    "lib/gpu/stage.h": ("lib",),              # the loader's GPU stage
    "lib/gpu/cudautil.h": ("tools", "bench"),  # the CLI bench's helpers
}
DECL_RE = re.compile(r"\b(gf_[a-z0-9_]+)\s*\(")

# Each dependency's header has its one includer (or, for the CUDA runtime,
# its one family of files): a pattern of the paths allowed to include it.
SYSTEM_HEADER_OWNERS = {
    "liburing.h": r"lib/io/uring\.c$",
    "png.h": r"lib/decode/png\.c$",
    "jpeglib.h": r"lib/decode/jpeg\.c$",
    "jerror.h": r"lib/decode/jpeg\.c$",
    "zstd.h": r"lib/decode/zstd\.c$",
    "curl/curl.h": r"lib/io/(storage_(http[a-z_]*|s3)|s3_client|s3_creds|s3_request|remote_failure)\.c$",
    "archive.h": r"lib/format/(tar_scan|wds_writer)\.c$",
    "archive_entry.h": r"lib/format/(tar_scan|wds_writer)\.c$",
    "openssl/evp.h": r"lib/io/s3_sigv4\.c$",
    "openssl/hmac.h": r"lib/io/s3_sigv4\.c$",
    "openssl/sha.h": r"lib/io/s3_sigv4\.c$",
    "nvtx3/nvToolsExt.h": r"lib/gpu/stage_cuda\.c$",
    "cuda_runtime.h": r"(lib/gpu/[a-z_]+_cuda\.c|kernels/[a-z_]+\.(h|cu))$",
    "cuda_runtime_api.h": r"(lib/gpu/[a-z_]+_cuda\.c|kernels/[a-z_]+\.(h|cu))$",
    "cuda.h": r"(lib/gpu/[a-z_]+_cuda\.c|kernels/[a-z_]+\.(h|cu))$",
    # Not installed everywhere: gpu/nvjpeg_api.h declares what nvjpeg_cuda.c
    # takes from the library with dlsym, so no file includes the real one.
    "nvjpeg.h": r"lib/gpu/nvjpeg_cuda\.c$",
}
SYSTEM_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+<([^>]+)>', re.M)

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
SOURCE_EXT = (".c", ".h", ".cu")


def layer_of(rel):
    """Folder (layer) of a path relative to the source dir, or None."""
    parts = rel.split("/")
    if parts[0] == "kernels":
        return "kernels"
    if parts[0] == "lib" and len(parts) == 3:
        return parts[1]
    if rel == "include/gpufeed.h":
        return "api"
    return None


def scan(src):
    files = []
    for top in ("lib", "kernels"):
        for dirpath, _, names in os.walk(os.path.join(src, top)):
            for n in sorted(names):
                if n.endswith(SOURCE_EXT):
                    files.append(os.path.relpath(os.path.join(dirpath, n), src))
    return sorted(files)


def resolve(src, rel, inc):
    """The file an #include "inc" in rel names, as the build's include path
    (the file's folder, lib/, kernels/, include/) finds it."""
    for base in (os.path.dirname(rel), "lib", "kernels", "include"):
        cand = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(os.path.join(src, cand)):
            return cand
    return None


def sccs(nodes, edges):
    """Strongly connected components with more than one node (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def check_includes(src, errors):
    files = scan(src)
    includes = {}
    for rel in files:
        with open(os.path.join(src, rel), encoding="utf-8",
                  errors="replace") as f:
            text = f.read()
        for sysinc in SYSTEM_INCLUDE_RE.findall(text):
            owner = SYSTEM_HEADER_OWNERS.get(sysinc)
            if owner and not re.search(owner, rel):
                errors.append("%s includes <%s>: only %s may (one includer "
                              "of each dependency's header)"
                              % (rel, sysinc, owner))
        incs = []
        for inc in INCLUDE_RE.findall(text):
            target = resolve(src, rel, inc)
            if target is None:
                errors.append('%s: #include "%s" names no file of lib/, '
                              'kernels/ or include/' % (rel, inc))
                continue
            incs.append(target)
        includes[rel] = incs

    # (a) the order.
    for rel, incs in includes.items():
        me = layer_of(rel)
        if me not in ALLOWED:
            errors.append("%s: folder %s is in no layer (add it to ALLOWED "
                          "here and to the order in lib/CMakeLists.txt)"
                          % (rel, me))
            continue
        for t in incs:
            them = layer_of(t)
            if them == "api" or them in ALLOWED[me]:
                continue
            errors.append("%s includes %s: %s may not depend on %s"
                          % (rel, t, me, them))

    # (b) headers that include each other (directly or round a loop), and
    # two source files each including the other's own header (a file's own
    # header: the one of its folder it includes first, as every file here
    # does).
    hedges = {rel: {t for t in incs if t.endswith(".h")}
              for rel, incs in includes.items() if rel.endswith(".h")}
    for comp in sccs(set(hedges), hedges):
        errors.append("headers include each other: %s" % ", ".join(comp))
    own = {}
    for rel, incs in includes.items():
        if not rel.endswith(".h") and incs and \
                os.path.dirname(incs[0]) == os.path.dirname(rel):
            own[rel] = incs[0]
    for a_ in sorted(own):
        for b_ in sorted(own):
            if a_ < b_ and own[a_] != own[b_] and \
                    own[b_] in includes[a_] and own[a_] in includes[b_]:
                errors.append("%s and %s include each other's header (%s, "
                              "%s)" % (a_, b_, own[b_], own[a_]))


def check_audience(src, errors):
    for header, where in sorted(AUDIENCE.items()):
        path = os.path.join(src, header)
        if not os.path.isfile(path):
            errors.append("%s: missing (named in AUDIENCE)" % header)
            continue
        with open(path, encoding="utf-8") as f:
            text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
        names = sorted(set(DECL_RE.findall(text)))
        stem = os.path.join(os.path.dirname(header),
                            os.path.basename(header)[:-2])
        users = []
        for top in where:
            for dirpath, _, files in os.walk(os.path.join(src, top)):
                for n in files:
                    rel = os.path.relpath(os.path.join(dirpath, n), src)
                    # Headers count too: a private header's inline
                    # helpers call (loader_impl.h's NVTX ranges).
                    if not n.endswith((".c", ".cu", ".h")) or \
                            rel == header or \
                            rel.startswith(stem + "_") or rel == stem + ".c":
                        continue
                    with open(os.path.join(src, rel), encoding="utf-8",
                              errors="replace") as f:
                        users.append(re.sub(r"/\*.*?\*/", "", f.read(),
                                            flags=re.S))
        for name in names:
            # A call sits in a function body, indented; a line that starts
            # at column 0 with the name is a declaration or a definition.
            word = re.compile(r"^[ \t]+(?:\S.*)?\b%s\b" % re.escape(name),
                              re.M)
            if not any(word.search(u) for u in users):
                errors.append("%s declares %s, which nothing in %s calls: "
                              "move it where its callers are (tests/ for "
                              "what only tests use)"
                              % (header, name, "/, ".join(where) + "/"))


def nm_objects(objects):
    """{object path: (defined globals, undefined)} from nm."""
    objs = {}
    for o in objects:
        out = subprocess.run(["nm", o], check=True, capture_output=True,
                             text=True).stdout
        defs, undef = set(), set()
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                undef.add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDBRVWGS" and \
                    parts[1].isupper():
                defs.add(parts[2])
        objs[o] = (defs, undef)
    return objs


def source_of(src_files, obj):
    """The source an object file of the build was compiled from: CMake
    names it <folder>/<file>.o under the target's directory (lib/ and, for
    the kernels, the source's path made relative)."""
    path = obj.replace(os.sep, "/")
    if path.endswith(".o"):
        path = path[:-2]
    best = None
    for rel in src_files:
        for cand in (rel, rel[len("lib/"):] if rel.startswith("lib/") else
                     None):
            if cand and path.endswith("/" + cand) and \
                    (best is None or len(cand) > len(best[1])):
                best = (rel, cand)
    return best[0] if best else None


def check_calls(src, objects, errors):
    src_files = [r for r in scan(src) if r.endswith((".c", ".cu"))]
    objs = nm_objects(objects)
    if not objs:
        errors.append("no object files given")
        return
    source = {}
    for o in objs:
        rel = source_of(src_files, o)
        if rel is None:
            errors.append("%s: no source of lib/ or kernels/ matches this "
                          "object file" % o)
            continue
        source[o] = rel
    definer = {}
    for member, (defs, _) in objs.items():
        for s in defs:
            definer[s] = member
    edges, why = {}, {}
    for member, (_, undef) in objs.items():
        if member not in source:
            continue
        for s in sorted(undef):
            d = definer.get(s)
            if d is None or d == member or d not in source:
                continue
            edges.setdefault(member, set()).add(d)
            why.setdefault((member, d), s)
            me, them = layer_of(source[member]), layer_of(source[d])
            if me in ALLOWED and them not in ALLOWED[me]:
                errors.append("%s calls %s (%s): %s may not depend on %s"
                              % (source[member], s, source[d], me, them))
            if source[d] in FOLDER_PRIVATE and \
                    os.path.dirname(source[d]) != \
                    os.path.dirname(source[member]):
                errors.append("%s calls %s of %s, which only its own folder "
                              "may call (go through its dispatcher)"
                              % (source[member], s, source[d]))
    for comp in sccs(set(source), edges):
        pairs = []
        for a in comp:
            for b in comp:
                if (a, b) in why:
                    pairs.append("%s -> %s (%s)" % (source[a], source[b],
                                                   why[(a, b)]))
        errors.append("object files call each other: " + "; ".join(pairs))


def main():
    if len(sys.argv) not in (2, 3):
        sys.stderr.write(__doc__)
        return 1
    src = sys.argv[1]
    errors = []
    check_includes(src, errors)
    check_audience(src, errors)
    if len(sys.argv) == 3:
        check_calls(src, [o for o in sys.argv[2].split(";") if o], errors)
    for e in errors:
        print("layers: " + e)
    if errors:
        print("layers: %d problem(s); the order is in tests/check_layers.py "
              "and lib/CMakeLists.txt" % len(errors))
        return 1
    print("layers: every include%s points down, no cycles"
          % (" and call" if len(sys.argv) == 3 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
