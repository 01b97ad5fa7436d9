"""One rank of test_s3_nodes.py's jobs (torchrun, gloo, host mode): reads
an s3:// source through its own fault proxy (S3_PROXIES, one URL a rank,
so that the proxy's log is this rank's requests), with its node's disk cache
(NODE_CACHE), and writes what it did to OUT/rank<R>.<MODE>.json:

    s3_nodes_worker.py URL OUT MODE KIND

KIND: "dataset" (block order) or "folder" (shuffled, resized to 8x8).
MODE:
  epoch0  epoch 0 whole: the indices delivered
  stop    epoch 1's first two batches, then the state (as a checkpoint)
  resume  the state of rank R's "stop" imported: the rest of epoch 1
  elastic rank 0's "stop" state imported into a job of another size (the
          elastic resume): the rest of epoch 1
"""
import json
import os
import sys

import torch.distributed as dist

import gpufeed

BATCH = 4


def main():
    url, out, mode, kind = sys.argv[1:5]
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    os.environ["AWS_ENDPOINT_URL_S3"] = os.environ["S3_PROXIES"].split(",")[rank]
    # The read-ahead at its least (fetch_bytes rounds up to the batches in
    # flight): with the default 256 MiB the fetch stage may run epochs ahead
    # while epoch 0 is consumed, and the test could no longer tell which
    # rank a fetched sample was for.
    kw = dict(seed=11, device="cpu",
              remote={"cache_dir": os.environ["NODE_CACHE"], "fetch_threads": 1,
                      "fetch_requests": 8, "fetch_bytes": 1})
    if kind == "folder":
        kw["transform"] = gpufeed.Resize(8)
    else:
        kw["order"] = "block"
    loader = gpufeed.Loader(url, BATCH, **kw)
    got = []
    res = {"rank": rank, "world": world}
    if mode == "epoch0":
        for b in loader.batches():
            got += list(b.indices)
            b.release()
    elif mode == "stop":
        loader.set_epoch(1)
        it = loader.batches()
        for _ in range(2):
            b = next(it)
            got += list(b.indices)
            b.release()
        res["state"] = loader.state_dict()
        del it
    else:
        src = rank if mode == "resume" else 0
        with open(os.path.join(out, "rank%d.stop.json" % src)) as f:
            loader.load_state_dict(json.load(f)["state"])
        for b in loader.batches():
            got += list(b.indices)
            b.release()
    res["indices"] = [int(i) for i in got]
    with open(os.path.join(out, "rank%d.%s.json" % (rank, mode)), "w") as f:
        json.dump(res, f)
    loader.close()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
