"""A small PNG reader for the tests (8-bit RGB/RGBA/grey, not interlaced): enough to count
lines of a known colour in a headless browser's screenshot, with the standard library only."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}  # colour type -> samples per pixel


class Image:
    """Rows of RGB bytes (3 per pixel)."""

    def __init__(self, width: int, height: int, rows: list[bytes]) -> None:
        self.width, self.height, self.rows = width, height, rows

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        r = self.rows[y]
        return r[3 * x], r[3 * x + 1], r[3 * x + 2]


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def read_png(path: Path | str) -> Image:
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    i, idat, head = 8, b"", None
    while i < len(data):
        (length,) = struct.unpack(">I", data[i: i + 4])
        kind, body = data[i + 4: i + 8], data[i + 8: i + 8 + length]
        if kind == b"IHDR":
            head = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
        i += 12 + length
    assert head is not None, "PNG without IHDR"
    width, height, depth, colour, _comp, _filt, interlace = head
    assert depth == 8 and colour in CHANNELS and interlace == 0, f"unsupported PNG: depth {depth}, colour {colour}"
    bpp = CHANNELS[colour]
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    rows: list[bytes] = []
    pos = 0
    for _ in range(height):
        ftype, line = raw[pos], bytearray(raw[pos + 1: pos + 1 + stride])
        pos += 1 + stride
        if ftype == 2:  # Up: no dependency along the row
            line = bytearray((u + v) & 0xFF for u, v in zip(line, prev))
        elif ftype in (1, 3, 4):  # Sub, Average, Paeth: each byte needs the one before it
            for x in range(stride):
                a = line[x - bpp] if x >= bpp else 0
                b = prev[x]
                if ftype == 1:
                    line[x] = (line[x] + a) & 0xFF
                elif ftype == 3:
                    line[x] = (line[x] + ((a + b) >> 1)) & 0xFF
                else:
                    line[x] = (line[x] + _paeth(a, b, prev[x - bpp] if x >= bpp else 0)) & 0xFF
        prev = line
        if bpp == 3:
            rows.append(bytes(line))
        elif bpp == 4:
            rows.append(bytes(b for i, b in enumerate(line) if i % 4 != 3))
        else:
            rows.append(bytes(line[x] for x in range(0, stride, bpp) for _ in range(3)))
    return Image(width, height, rows)


def hex_rgb(colour: str) -> bytes:
    return bytes.fromhex(colour.lstrip("#"))


def _groups(indices: list[int]) -> int:
    """How many runs of consecutive integers `indices` holds (a 2-px line is one line)."""
    n, last = 0, None
    for i in sorted(indices):
        if last is None or i > last + 1:
            n += 1
        last = i
    return n


def _positions(row: bytes, rgb: bytes) -> list[int]:
    """The x of every pixel of exactly colour `rgb` in a row (crisp strokes are drawn exact)."""
    out, i = [], row.find(rgb)
    while i >= 0:
        if i % 3 == 0:
            out.append(i // 3)
        i = row.find(rgb, i + 1)
    return out


def vertical_lines(img: Image, colour: str, min_fraction: float = 0.5, every: int = 4) -> int:
    """Lines of exactly `colour` running down at least `min_fraction` of the image's height
    (every `every`-th row sampled)."""
    rgb = hex_rgb(colour)
    sampled = range(0, img.height, every)
    hits: dict[int, int] = {}
    for y in sampled:
        for x in _positions(img.rows[y], rgb):
            hits[x] = hits.get(x, 0) + 1
    return _groups([x for x, n in hits.items() if n >= min_fraction * len(sampled)])


def horizontal_lines(img: Image, colours: list[str], min_run: int) -> int:
    """Rows holding an unbroken run of at least `min_run` pixels of one of `colours`, grouped."""
    runs = [hex_rgb(c) * min_run for c in colours]
    hits = [y for y in range(img.height) if any(_positions(img.rows[y], r) for r in runs)]
    return _groups(hits)
