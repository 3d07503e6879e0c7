// Writes the two 4-component JPEGs PIL cannot write, for tests/fixtures/images (committed; rerun
// by hand, then make_decode_fixtures.py --out records PIL's decoding of them):
//   jpeg_ycck.jpg           Adobe APP14 transform 2 (YCCK), as Photoshop writes CMYK
//   jpeg_cmyk_no_adobe.jpg  CMYK without an Adobe marker (Pillow still reads it as inverted)
// Build: c++ -O2 -o /tmp/make_ycck_jpeg tools/images/make_ycck_jpeg.cc -ljpeg
// Usage: /tmp/make_ycck_jpeg OUT_DIR
#include <cstddef>
#include <cstdio>
#include <jpeglib.h>

#include <string>
#include <vector>

static void write(const std::string& path, J_COLOR_SPACE space, bool adobe) {
  const int w = 17, h = 9;
  std::vector<unsigned char> cmyk(w * h * 4);
  unsigned seed = 12345;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      unsigned char* p = &cmyk[(y * w + x) * 4];
      seed = seed * 1103515245u + 12345u;
      p[0] = static_cast<unsigned char>(x * 15);
      p[1] = static_cast<unsigned char>(y * 28);
      p[2] = static_cast<unsigned char>((x + y) * 9 + (seed >> 28));
      p[3] = static_cast<unsigned char>(((seed >> 16) & 0x7F) + 40);
    }
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return;
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  jpeg_stdio_dest(&c, f);
  c.image_width = w;
  c.image_height = h;
  c.input_components = 4;
  c.in_color_space = JCS_CMYK;
  jpeg_set_defaults(&c);
  jpeg_set_colorspace(&c, space);
  c.write_Adobe_marker = adobe ? TRUE : FALSE;
  jpeg_set_quality(&c, 90, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < c.image_height) {
    JSAMPROW row = &cmyk[c.next_scanline * w * 4];
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::fclose(f);
}

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  write(dir + "/jpeg_ycck.jpg", JCS_YCCK, true);
  write(dir + "/jpeg_cmyk_no_adobe.jpg", JCS_CMYK, false);
  return 0;
}
