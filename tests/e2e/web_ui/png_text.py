#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# Finds the text in a PNG written by `tailcause heatmap`: decodes it with the standard library
# (8-bit RGB, as cmd_heatmap writes) and counts dark pixels (luminance under 100) in the bands
# where the layout puts text and no cell: the title above the grid, the y labels left of it,
# the x labels and the x title under it (the grid ends 40 pixels above the bottom, its margin
# for the y labels is at least 200 pixels). Prints one JSON object; the shell test judges it.
# usage: png_text.py FILE.png
import json
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    at, idat, width = 8, b"", 0
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", body[:10])
            assert (depth, colour) == (8, 2), "not 8-bit RGB"
        elif kind == b"IDAT":
            idat += body
        at += 12 + length
    raw, stride, rows, prev = zlib.decompress(idat), width * 3, [], bytearray(width * 3)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], prev[i - 3] if i >= 3 else 0
            if kind == 1: line[i] = (line[i] + a) & 0xff
            elif kind == 2: line[i] = (line[i] + b) & 0xff
            elif kind == 3: line[i] = (line[i] + (a + b) // 2) & 0xff
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xff
        rows.append(line)
        prev = line
    return width, height, rows


def main():
    width, height, rows = decode(sys.argv[1])

    def dark(x0, x1, y0, y1):
        n = 0
        for y in range(max(0, y0), min(height, y1)):
            row = rows[y]
            for x in range(max(0, x0), min(width, x1)):
                r, g, b = row[3 * x:3 * x + 3]
                n += (299 * r + 587 * g + 114 * b) // 1000 < 100
        return n

    grid_bottom = height - 40
    print(json.dumps({
        "width": width, "height": height,
        "title": dark(0, width, 0, 24),
        "y_labels": dark(120, 196, 48, grid_bottom - 4),
        "x_labels": dark(200, width, grid_bottom + 2, height - 20),
        "x_title": dark(200, width, height - 20, height),
    }))


main()
