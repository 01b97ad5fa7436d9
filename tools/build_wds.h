/* build_wds.c: `gpufeed build SRC OUT --format wds`, the image folder
 * written as WebDataset tar shards (lib/format/wds_writer.h) instead of a
 * gpufeed dataset. build.c hands a build over to it when the format asks.
 * (A header of its own while tools/cli.h is being changed elsewhere; its
 * one declaration belongs beside build_s3.c's in cli.h.) */
#ifndef GFC_BUILD_WDS_H
#define GFC_BUILD_WDS_H

#include "cli.h"

/* Builds the shards: SRC listed as `gpufeed build` lists it (o->src,
 * o->labels, o->follow_symlinks, o->remote), each file read and decoded
 * once to check it (o->skip_bad skips what fails, as build does, so that
 * sample i of both formats is the same file), then written as it is into
 * OUT's shard-NNNNNN.tar files of at most o->shard_size bytes; o->force
 * replaces shards already in OUT; o->threads, o->quiet as for build. With
 * json, the summary is one JSON object on stdout. Returns the exit
 * status. Main thread. */
int gfc_build_wds(const gfc_build_opts *o, bool json);

#endif
