#!/usr/bin/env python3
"""tools/pngcheck.py PNG WIDTH HEIGHT -- exits 0 when PNG is a WIDTH x HEIGHT
image that is not blank: it has at least 8 distinct colours and at least 2 %
of its pixels differ from the most common one (the background). Python's
standard library only (zlib): 8-bit RGB or RGBA, non-interlaced, as Chromium
writes its screenshots."""
import struct
import sys
import zlib


def pixels(path):
    with open(path, "rb") as fh:
        data = fh.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError("want 8-bit RGB(A), non-interlaced; got depth %d type %d"
                                 % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw, stride = zlib.decompress(idat), w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


def main():
    path, want_w, want_h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    w, h, bpp, rows = pixels(path)
    if (w, h) != (want_w, want_h):
        print("%s: %dx%d, want %dx%d" % (path, w, h, want_w, want_h))
        return 1
    counts = {}
    for r in rows[::4]:
        for x in range(0, w * bpp, 4 * bpp):
            px = r[x:x + 3]
            counts[px] = counts.get(px, 0) + 1
    total = sum(counts.values())
    top = max(counts.values())
    if len(counts) < 8 or total - top < 0.02 * total:
        print("%s: blank (%d colours, %.1f%% off the background)"
              % (path, len(counts), 100.0 * (total - top) / total))
        return 1
    print("%s: %dx%d, %d colours, %.1f%% off the background"
          % (path, w, h, len(counts), 100.0 * (total - top) / total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
