#!/usr/bin/python3
"""The loader's order, written from lib/pipeline/sampler.h's description
alone (sections 1-5), for checking the C sampler bit for bit:
test_sampler_perm's known answers come from here.

    python3 tests/sampler_ref.py N SEED EPOCH ORDER RANK WORLD BATCH \\
        PARTITION DROP_LAST BLOCK_SIZE WINDOW_BLOCKS COUNT [START ORDER_WORLD]

prints the batch count of the rank's epoch, then the first COUNT samples of
its share (NONE past its end). ORDER: 0 shuffle, 1 sequential, 2 block;
PARTITION: 0 pad, 1 drop.
"""
import sys

M = (1 << 64) - 1
G = 0x9E3779B97F4A7C15
NONE = M


def mix(z):
    z &= M
    z ^= z >> 30
    z = (z * 0xBF58476D1CE4E5B9) & M
    z ^= z >> 27
    z = (z * 0x94D049BB133111EB) & M
    z ^= z >> 31
    return z


def sub(k, t):
    return mix(k ^ mix((t + G) & M))


class Perm:
    def __init__(self, key, m):
        self.m = m
        bits = max(8, (m - 1).bit_length()) if m > 1 else 8
        self.a = bits - bits // 2
        self.b = bits // 2
        self.k = [sub(key, i) for i in range(8)]

    def f(self, x):
        wl, wr = self.a, self.b
        l, r = x >> wr, x & ((1 << wr) - 1)
        for i in range(8):
            fv = mix(r ^ self.k[i]) & ((1 << wl) - 1)
            l, r = r, l ^ fv
            wl, wr = wr, wl
        return (l << wr) | r

    def finv(self, y):
        # Undo the rounds from K[7] down to K[0].
        wl, wr = self.a, self.b
        l, r = y >> wr, y & ((1 << wr) - 1)
        for i in range(7, -1, -1):
            # After round i: (l, r) = (r_old, l_old ^ f(r_old)) with the
            # widths swapped; the widths before the round were (wr, wl).
            wl, wr = wr, wl
            r_old = l
            fv = mix(r_old ^ self.k[i]) & ((1 << wl) - 1)
            l_old = r ^ fv
            l, r = l_old, r_old
        return (l << wr) | r

    def apply(self, x):
        if self.m == 1:
            return 0
        y = self.f(x)
        while y >= self.m:
            y = self.f(y)
        return y

    def inverse(self, y):
        if self.m == 1:
            return 0
        x = self.finv(y)
        while x >= self.m:
            x = self.finv(x)
        return x


class Order:
    def __init__(self, n, seed, epoch, order, bs, W, V):
        self.n, self.order = n, order
        E = sub(seed, epoch)
        self.E = E
        if order == 0:
            self.p = Perm(sub(E, 0), n)
        elif order == 2:
            self.bs, self.W, self.V = bs, W, V
            nb = (n - 1) // bs + 1
            self.nb = nb
            self.last = n - (nb - 1) * bs
            self.d = bs - self.last
            self.p = Perm(sub(E, 1), nb)
            self.jstar = self.p.inverse(nb - 1)
            self.wstar = self.jstar // W
            self.nw = (nb + W - 1) // W
            self.wl = W * bs
            self.L = [sum(self.S(w) for w in range(r, self.nw, V))
                      for r in range(V)]
            self.Lmin = min(self.L)

    def S(self, w):
        return (min((w + 1) * self.W, self.nb) - w * self.W) * self.bs - \
            (self.d if w == self.wstar else 0)

    def rank_place(self, r, i):
        V, wl, d = self.V, self.wl, self.d
        if self.wstar % V == r:
            ks = (self.wstar - r) // V
            if i < ks * wl:
                k, o = i // wl, i % wl
            elif i < ks * wl + self.S(self.wstar):
                k, o = ks, i - ks * wl
            else:
                k, o = (i + d) // wl, (i + d) % wl
        else:
            k, o = i // wl, i % wl
        return r + k * V, o

    def __call__(self, q):
        if self.order == 1:
            return q
        if self.order == 0:
            return self.p.apply(q)
        V = self.V
        if q < V * self.Lmin:
            w, o2 = self.rank_place(q % V, q // V)
        else:
            t = q - V * self.Lmin
            for r in range(V):
                extra = self.L[r] - self.Lmin
                if t < extra:
                    w, o2 = self.rank_place(r, self.Lmin + t)
                    break
                t -= extra
        o = Perm(sub(self.E, 2 + w), self.S(w)).apply(o2)
        bs, W = self.bs, self.W
        ss = self.jstar - w * W
        if w != self.wstar or o < ss * bs:
            slot, off = o // bs, o % bs
        elif o < ss * bs + self.last:
            slot, off = ss, o - ss * bs
        else:
            slot, off = (o + self.d) // bs, (o + self.d) % bs
        return self.p.apply(w * W + slot) * bs + off


def share(n, world, rank, partition, start):
    if start == 0:
        total = n // world * world if partition == 1 else \
            (n + world - 1) // world * world
        return total // world
    rest = n - start
    if partition == 1:
        return rest // world
    return (rest - rank - 1) // world + 1 if rest > rank else 0


def main(a):
    n, seed, epoch, order, rank, world, batch, partition, drop_last, bs, W, \
        count = map(int, a[:12])
    start = int(a[12]) if len(a) > 12 else 0
    vworld = int(a[13]) if len(a) > 13 else world
    O = Order(n, seed, epoch, order, bs, W, vworld)
    sh = share(n, world, rank, partition, start)
    batches = sh // batch if drop_last else (sh + batch - 1) // batch
    print(batches)
    out = []
    for i in range(count):
        if i >= sh:
            out.append("NONE")
            continue
        q = start + rank + i * world
        if q >= n:
            q %= n
        out.append(str(O(q)))
    print(" ".join(out))


if __name__ == "__main__":
    main(sys.argv[1:])
