#!/usr/bin/env python3
"""Writes the decoding fixtures of tests/image: small images of every mode, format variant and
EXIF orientation that image/decode.cc reads, plus broken files, and expected.json, what
transformers' image_utils.load_image gives for each (PIL.Image.open, ImageOps.exif_transpose,
convert("RGB")): width, height and the SHA-256 of the RGB bytes, or the error PIL raises.

    make_decode_fixtures.py --out tests/fixtures/images        # write images + expected.json
    make_decode_fixtures.py --check tests/fixtures/images [--out DIR]
        # re-decode the committed images with this machine's Pillow (and transformers' load_image
        # when importable), print which expectations match, write the new expected.json to DIR

The committed expected.json is the GPU machine's (--check --out): Pillow 12.3.0 with
transformers 5.17.0's load_image, libjpeg-turbo 3.1.4.1, libwebp 1.6.0. Debian 12's Pillow 9.4
differs on eight images (it reads no XMP orientation from JPEG or WebP, keeps only the first
JPEG EXIF segment, takes no dpi from a JFIF density in dots per cm, refuses a JPEG whose EXIF is
a TIFF header cut short, and gives a grey ramp for palette indices past PLTE where 12.3 gives
black): after --out, rerun --check on the GPU machine and commit its expected.json.
Only PIL is needed (no numpy). Formats PIL cannot write (16-bit PNG, 2/4-bit gray, interlaced,
out-of-range palette indices, eXIf after IDAT, hand-made TIFF tags) are written by the small
PNG/TIFF writers below; the YCCK and marker-less CMYK JPEGs by make_ycck_jpeg.cc (run it first).
"""
import argparse
import hashlib
import io
import json
import os
import random
import struct
import sys
import zlib

from PIL import Image, ImageOps


def rgb_pattern(w, h, seed):
    """Smooth gradients with noise, different in every pixel, so a wrong transposition shows."""
    rnd = random.Random(seed)
    data = bytearray()
    for y in range(h):
        for x in range(w):
            data += bytes(((x * 255 // max(w - 1, 1) + rnd.randrange(16)) % 256,
                           (y * 255 // max(h - 1, 1) + rnd.randrange(16)) % 256,
                           ((x + y) * 97 + rnd.randrange(64)) % 256))
    return Image.frombytes("RGB", (w, h), bytes(data))


def random_bytes(n, seed):
    rnd = random.Random(seed)
    return bytes(rnd.randrange(256) for _ in range(n))


# --- a minimal PNG writer, for what PIL does not write -------------------------------------------
def chunk(ctype, data, crc=None):
    c = zlib.crc32(ctype + data) & 0xFFFFFFFF if crc is None else crc
    return struct.pack(">I", len(data)) + ctype + data + struct.pack(">I", c)


ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]


def pack_row(samples, bit_depth):
    if bit_depth == 8:
        return bytes(samples)
    if bit_depth == 16:
        return b"".join(struct.pack(">H", s) for s in samples)
    out, acc, nbits = bytearray(), 0, 0
    for s in samples:
        acc = (acc << bit_depth) | s
        nbits += bit_depth
        if nbits == 8:
            out.append(acc)
            acc, nbits = 0, 0
    if nbits:
        out.append(acc << (8 - nbits))
    return bytes(out)


def png_bytes(w, h, color_type, bit_depth, pixels, extra_before=(), extra_after=(), interlace=False,
              idat_crc=None):
    """pixels[y][x] is a tuple of samples (channels of the colour type)."""
    raw = bytearray()
    if interlace:
        for x0, y0, dx, dy in ADAM7:
            xs = list(range(x0, w, dx))
            if not xs:
                continue
            for y in range(y0, h, dy):
                raw.append(0)
                raw += pack_row([s for x in xs for s in pixels[y][x]], bit_depth)
    else:
        for y in range(h):
            raw.append(0)
            raw += pack_row([s for x in range(w) for s in pixels[y][x]], bit_depth)
    ihdr = struct.pack(">IIBBBBB", w, h, bit_depth, color_type, 0, 0, 1 if interlace else 0)
    out = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
    for c in extra_before:
        out += c
    out += chunk(b"IDAT", zlib.compress(bytes(raw), 9), idat_crc)
    for c in extra_after:
        out += c
    return out + chunk(b"IEND", b"")


def grid(w, h, channels, maxval, seed):
    rnd = random.Random(seed)
    return [[tuple(rnd.randrange(maxval + 1) for _ in range(channels)) for _ in range(w)] for _ in range(h)]


# --- EXIF blocks ----------------------------------------------------------------------------------
def tiff_ifd0(entries, big_endian=False):
    """A TIFF block whose IFD0 holds `entries` (tag, type, count, value-bytes of 4, already in order)."""
    e = ">" if big_endian else "<"
    out = (b"MM\x00\x2a" if big_endian else b"II\x2a\x00") + struct.pack(e + "I", 8)
    out += struct.pack(e + "H", len(entries))
    for tag, typ, count, value in entries:
        out += struct.pack(e + "HHI", tag, typ, count) + value
    return out + struct.pack(e + "I", 0)


def exif_for(orientation):
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif.tobytes()


def jpeg_with_app1(jpeg, payload):
    """Inserts an APP1 segment right after SOI."""
    return jpeg[:2] + b"\xff\xe1" + struct.pack(">H", len(payload) + 2) + payload + jpeg[2:]


def save(im, fmt, **kw):
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def make_images():
    files = {}
    base = rgb_pattern(17, 9, 1)
    rgba = base.copy()
    rgba.putalpha(Image.frombytes("L", base.size, random_bytes(17 * 9, 2)))

    # PNG, every colour type and bit depth
    files["png_rgb8.png"] = save(base, "PNG")
    files["png_rgba8.png"] = save(rgba, "PNG")
    files["png_l8.png"] = save(base.convert("L"), "PNG")
    files["png_la8.png"] = save(rgba.convert("LA"), "PNG")
    files["png_1bit.png"] = save(base.convert("1"), "PNG")
    files["png_p8.png"] = save(base.convert("P", palette=Image.ADAPTIVE, colors=200), "PNG")
    p_trns = base.convert("P", palette=Image.ADAPTIVE, colors=16)
    files["png_p4_trns.png"] = save(p_trns, "PNG", bits=4, transparency=3)
    files["png_1x1.png"] = save(rgb_pattern(1, 1, 3), "PNG")
    w, h = 13, 7
    for bd in (1, 2, 4, 16):
        files[f"png_gray{bd}.png"] = png_bytes(w, h, 0, bd, grid(w, h, 1, (1 << bd) - 1, 10 + bd))
    # 16-bit gray with values both below and above 255 (I;16 → RGB clips)
    small = [[((x * 37 + y * 11) % 600,) for x in range(w)] for y in range(h)]
    files["png_gray16_small.png"] = png_bytes(w, h, 0, 16, small)
    files["png_rgb16.png"] = png_bytes(w, h, 2, 16, grid(w, h, 3, 65535, 20))
    files["png_rgba16.png"] = png_bytes(w, h, 6, 16, grid(w, h, 4, 65535, 21))
    files["png_la16.png"] = png_bytes(w, h, 4, 16, grid(w, h, 2, 65535, 22))
    plte = chunk(b"PLTE", bytes(random_bytes(3 * 16, 23)))
    trns = chunk(b"tRNS", bytes([0, 128, 255, 7]))
    for bd in (1, 2, 4, 8):
        files[f"png_palette{bd}.png"] = png_bytes(w, h, 3, bd, grid(w, h, 1, min((1 << bd) - 1, 15), 30 + bd),
                                                  extra_before=[plte, trns])
    # indices past the 16 PLTE entries
    files["png_palette_out_of_range.png"] = png_bytes(w, h, 3, 8, grid(w, h, 1, 255, 35), extra_before=[plte])
    files["png_interlaced_rgb.png"] = png_bytes(17, 9, 2, 8, grid(17, 9, 3, 255, 40), interlace=True)
    files["png_interlaced_gray2.png"] = png_bytes(17, 9, 0, 2, grid(17, 9, 1, 3, 41), interlace=True)
    # animation: the default image is frame 0; and one where IDAT is not part of the animation
    frames = [rgb_pattern(17, 9, 50 + i) for i in range(3)]
    files["apng.png"] = save(frames[0], "PNG", save_all=True, append_images=frames[1:], duration=100)
    files["apng_default_image.png"] = save(frames[0], "PNG", save_all=True, append_images=frames[1:],
                                           default_image=True, duration=100)
    # EXIF orientation in eXIf (before IDAT, as PIL writes it), after IDAT, and in XMP
    for o in range(1, 9):
        files[f"png_exif_{o}.png"] = save(base, "PNG", exif=exif_for(o))
    g = grid(17, 9, 3, 255, 60)
    files["png_exif_after_idat_6.png"] = png_bytes(17, 9, 2, 8, g, extra_after=[chunk(b"eXIf", exif_for(6)[6:])])
    xmp = (b'<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF><rdf:Description '
           b'xmlns:tiff="http://ns.adobe.com/tiff/1.0/" tiff:Orientation="6"/></rdf:RDF></x:xmpmeta>')
    files["png_xmp_6.png"] = png_bytes(17, 9, 2, 8, g, extra_before=[
        chunk(b"iTXt", b"XML:com.adobe.xmp\x00\x00\x00\x00\x00" + xmp)])
    # broken: bad IDAT CRC (Pillow does not check it), bad IHDR CRC, truncated, no IEND
    files["png_exif_bad_header.png"] = png_bytes(17, 9, 2, 8, g, extra_before=[chunk(b"eXIf", b"not a tiff block")])
    files["png_text_xmp_8.png"] = png_bytes(17, 9, 2, 8, g, extra_before=[
        chunk(b"tEXt", b"XML:com.adobe.xmp\x00" + xmp.replace(b'"6"', b'"8"'))])
    # ImageMagick's hex EXIF profile, compressed (zTXt) and plain (tEXt)
    def raw_profile(exif):
        hexed = exif.hex()
        lines = [hexed[i:i + 72] for i in range(0, len(hexed), 72)]
        return ("\nexif\n%8d\n" % len(exif) + "\n".join(lines) + "\n").encode()
    files["png_ztxt_raw_profile_6.png"] = png_bytes(17, 9, 2, 8, g, extra_before=[
        chunk(b"zTXt", b"Raw profile type exif\x00\x00" + zlib.compress(raw_profile(exif_for(6))))])
    files["png_text_raw_profile_3.png"] = png_bytes(17, 9, 2, 8, g, extra_before=[
        chunk(b"tEXt", b"Raw profile type exif\x00" + raw_profile(exif_for(3)))])
    files["png_exif_short_tiff.png"] = png_bytes(17, 9, 2, 8, g, extra_before=[chunk(b"eXIf", b"II*\x00\x08\x00")])
    files["png_bad_idat_crc.png"] = png_bytes(17, 9, 2, 8, g, idat_crc=0x12345678)
    good = files["png_rgb8.png"]
    files["png_bad_ihdr_crc.png"] = good[:29] + bytes([good[29] ^ 0xFF]) + good[30:]
    files["png_truncated.png"] = good[: len(good) // 2]
    files["png_no_iend.png"] = good[:-12]

    # JPEG
    files["jpeg_420.jpg"] = save(base, "JPEG", quality=90)
    files["jpeg_444.jpg"] = save(base, "JPEG", quality=95, subsampling=0)
    files["jpeg_422.jpg"] = save(rgb_pattern(23, 15, 70), "JPEG", quality=85, subsampling=1)
    files["jpeg_gray.jpg"] = save(base.convert("L"), "JPEG", quality=90)
    files["jpeg_cmyk.jpg"] = save(base.convert("CMYK"), "JPEG", quality=90)
    files["jpeg_progressive.jpg"] = save(rgb_pattern(33, 21, 71), "JPEG", quality=80, progressive=True)
    files["jpeg_1x1.jpg"] = save(rgb_pattern(1, 1, 72), "JPEG")
    for o in range(1, 9):
        files[f"jpeg_exif_{o}.jpg"] = save(base, "JPEG", quality=90, exif=exif_for(o))
    plain = files["jpeg_420.jpg"]
    files["jpeg_exif_two_6_3.jpg"] = jpeg_with_app1(jpeg_with_app1(plain, exif_for(3)), exif_for(6))
    files["jpeg_420_big.jpg"] = save(rgb_pattern(96, 64, 73), "JPEG", quality=75)
    files["jpeg_xmp_6.jpg"] = jpeg_with_app1(plain, b"http://ns.adobe.com/xap/1.0/\x00" + xmp)
    files["jpeg_exif_bad_header.jpg"] = jpeg_with_app1(plain, b"Exif\x00\x00not a tiff block")
    # the same after a JFIF segment giving dots per inch: Pillow no longer reads the EXIF at open
    # (its dpi fallback swallows the error there), so exif_transpose raises
    with_dpi = save(base, "JPEG", quality=90, dpi=(96, 96))
    app0_end = 4 + struct.unpack(">H", with_dpi[4:6])[0]
    files["jpeg_exif_bad_header_dpi.jpg"] = (with_dpi[:app0_end] + b"\xff\xe1" + struct.pack(">H", 24)
                                             + b"Exif\x00\x00not a tiff block" + with_dpi[app0_end:])
    # Orientation stored as other TIFF types
    files["jpeg_exif_long_6.jpg"] = jpeg_with_app1(plain, b"Exif\x00\x00" + tiff_ifd0(
        [(0x0112, 4, 1, struct.pack("<I", 6))]))
    files["jpeg_exif_be_short_8.jpg"] = jpeg_with_app1(plain, b"Exif\x00\x00" + tiff_ifd0(
        [(0x0112, 3, 1, struct.pack(">HH", 8, 0))], big_endian=True))
    files["jpeg_exif_ascii_6.jpg"] = jpeg_with_app1(plain, b"Exif\x00\x00" + tiff_ifd0(
        [(0x0112, 2, 2, b"6\x00\x00\x00")]))
    files["jpeg_exif_byte_6.jpg"] = jpeg_with_app1(plain, b"Exif\x00\x00" + tiff_ifd0(
        [(0x0112, 1, 1, b"\x06\x00\x00\x00")]))
    files["jpeg_exif_short_count2_3.jpg"] = jpeg_with_app1(plain, b"Exif\x00\x00" + tiff_ifd0(
        [(0x0112, 3, 2, struct.pack("<HH", 3, 6))]))
    files["jpeg_exif_rational_6.jpg"] = jpeg_with_app1(plain, b"Exif\x00\x00" + tiff_ifd0(
        [(0x0112, 5, 1, struct.pack("<I", 26))]) + struct.pack("<II", 12, 2))
    files["jpeg_exif_value_9.jpg"] = jpeg_with_app1(plain, b"Exif\x00\x00" + tiff_ifd0(
        [(0x0112, 3, 1, struct.pack("<HH", 9, 0))]))
    files["jpeg_exif_empty_ifd.jpg"] = jpeg_with_app1(plain, b"Exif\x00\x00" + tiff_ifd0([]))
    # Pillow 12 joins every "Exif\0\0" APP1: the Orientation's values lie in the second segment
    tiff1 = tiff_ifd0([(0x0112, 3, 3, struct.pack("<I", 26))])
    files["jpeg_exif_split_6.jpg"] = jpeg_with_app1(jpeg_with_app1(
        plain, b"Exif\x00\x00" + struct.pack("<HHH", 6, 0, 0)), b"Exif\x00\x00" + tiff1)
    # the last XMP packet counts
    files["jpeg_xmp_two_6_8.jpg"] = jpeg_with_app1(jpeg_with_app1(
        plain, b"http://ns.adobe.com/xap/1.0/\x00" + xmp.replace(b'"6"', b'"8"')),
        b"http://ns.adobe.com/xap/1.0/\x00" + xmp)
    # JFIF density in dots per cm also gives Pillow its dpi: the bad EXIF is met by exif_transpose
    dpcm = bytearray(files["jpeg_exif_bad_header_dpi.jpg"])
    dpcm[13] = 2
    files["jpeg_exif_bad_header_dpcm.jpg"] = bytes(dpcm)
    # a bad EXIF read at open (no JFIF dpi) leaves an empty cached EXIF: no XMP fallback either
    files["jpeg_exif_bad_header_xmp_6.jpg"] = jpeg_with_app1(jpeg_with_app1(
        plain, b"http://ns.adobe.com/xap/1.0/\x00" + xmp), b"Exif\x00\x00not a tiff block")
    files["jpeg_exif_short_tiff.jpg"] = jpeg_with_app1(plain, b"Exif\x00\x00II*\x00\x08\x00")
    files["jpeg_truncated.jpg"] = plain[: len(plain) * 2 // 3]
    files["jpeg_no_eoi.jpg"] = plain[:-2]
    prog = files["jpeg_progressive.jpg"]
    files["jpeg_progressive_no_eoi.jpg"] = prog[:-2]
    files["jpeg_progressive_truncated.jpg"] = prog[: len(prog) * 3 // 4]

    # WebP
    files["webp_lossy.webp"] = save(base, "WEBP", quality=80)
    files["webp_lossless.webp"] = save(base, "WEBP", lossless=True)
    files["webp_lossy_alpha.webp"] = save(rgba, "WEBP", quality=80)
    files["webp_lossless_alpha.webp"] = save(rgba, "WEBP", lossless=True, exact=True)
    files["webp_gray_lossless.webp"] = save(base.convert("L").convert("RGB"), "WEBP", lossless=True)
    files["webp_animated.webp"] = save(frames[0], "WEBP", save_all=True, append_images=frames[1:],
                                       lossless=True, duration=100)
    for o in (3, 6, 8):
        files[f"webp_exif_{o}.webp"] = save(base, "WEBP", lossless=True, exif=exif_for(o))
    try:
        files["webp_xmp_6.webp"] = save(base, "WEBP", lossless=True, xmp=xmp)
    except TypeError:
        pass
    files["webp_truncated.webp"] = files["webp_lossy.webp"][:40]

    # not an image we read
    files["not_an_image.gif"] = save(base.convert("P"), "GIF")
    return files


def reference_decode(path, use_transformers):
    """What load_image gives: (width, height, sha256 of RGB bytes) or ("error", message)."""
    try:
        if use_transformers:
            from transformers.image_utils import load_image
            im = load_image(path)
        else:
            with Image.open(path) as im0:
                im = ImageOps.exif_transpose(im0)
                im = im.convert("RGB")
        return {"width": im.width, "height": im.height,
                "sha256": hashlib.sha256(im.tobytes()).hexdigest()}
    except Exception as e:  # noqa: BLE001 - the error is the expectation
        return {"error": f"{type(e).__name__}: {e}"}


def versions():
    v = {"pillow": Image.__version__}
    try:
        from PIL import features
        v["libjpeg_turbo"] = features.version("libjpeg_turbo")
        v["webp"] = features.version("webp")
        v["zlib"] = features.version("zlib")
    except Exception:  # noqa: BLE001
        pass
    try:
        import transformers
        v["transformers"] = transformers.__version__
    except Exception:  # noqa: BLE001
        v["transformers"] = None
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--check")
    args = ap.parse_args()
    if args.check:
        folder = args.check
        with open(os.path.join(folder, "expected.json")) as f:
            expected = json.load(f)
        v = versions()
        print("versions:", json.dumps(v))
        use_tf = v.get("transformers") is not None
        import inspect
        if use_tf:
            from transformers.image_utils import load_image
            print(inspect.getsource(load_image))
        print(inspect.getsource(ImageOps.exif_transpose))
        print(inspect.getsource(Image.Image.getexif))
        new = {"versions": v, "images": {}}
        mismatches = 0
        for name, want in sorted(expected["images"].items()):
            got = reference_decode(os.path.join(folder, name), use_tf)
            plain = reference_decode(os.path.join(folder, name), False)
            new["images"][name] = got
            if args.out and "error" not in got:
                # the pixels themselves, to measure any difference
                os.makedirs(os.path.join(args.out, "ppm"), exist_ok=True)
                with Image.open(os.path.join(folder, name)) as im0:
                    ImageOps.exif_transpose(im0).convert("RGB").save(os.path.join(args.out, "ppm", name + ".ppm"))
            same = (("error" in got) == ("error" in want)) if ("error" in got or "error" in want) else got == want
            mismatches += not same
            print(f"{'match' if same else 'MISMATCH':8} {name}: {got}" + ("" if same else f" (recorded {want})")
                  + ("" if plain == got else f" [plain PIL differs: {plain}]"))
        print(f"{mismatches} mismatches of {len(expected['images'])}")
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "expected.json"), "w") as f:
                json.dump(new, f, indent=1, sort_keys=True)
        return
    os.makedirs(args.out, exist_ok=True)
    files = make_images()
    for name, data in sorted(files.items()):
        with open(os.path.join(args.out, name), "wb") as f:
            f.write(data)
    results = {}
    for name in sorted(os.listdir(args.out)):
        if name != "expected.json":
            results[name] = reference_decode(os.path.join(args.out, name), False)
    with open(os.path.join(args.out, "expected.json"), "w") as f:
        json.dump({"versions": versions(), "images": results}, f, indent=1, sort_keys=True)
    total = sum(os.path.getsize(os.path.join(args.out, n)) for n in results)
    print(f"{len(results)} images, {total} bytes")
    for name, r in sorted(results.items()):
        if "error" in r:
            print(f"  {name}: {r['error']}")


if __name__ == "__main__":
    sys.exit(main())
