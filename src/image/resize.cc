#include "image/resize.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "core/error.h"

namespace il::image {
namespace {

constexpr double kPi = 3.14159265358979323846;  // M_PI, as Pillow uses

// ---- Pillow's filters (Resample.c), written with the same expressions so that the doubles
// they give are the same to the last bit.
double pillow_box(double x) { return (x > -0.5 && x <= 0.5) ? 1.0 : 0.0; }

double pillow_bilinear(double x) {
  if (x < 0.0) x = -x;
  return x < 1.0 ? 1.0 - x : 0.0;
}

double pillow_hamming(double x) {
  if (x < 0.0) x = -x;
  if (x == 0.0) return 1.0;
  if (x >= 1.0) return 0.0;
  x = x * kPi;
  // Pillow writes the window's constants as float literals (0.54f, 0.46f).
  return std::sin(x) / x * (0.54f + 0.46f * std::cos(x));
}

double pillow_bicubic(double x) {
  constexpr double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x = x * kPi;
  return std::sin(x) / x;
}

double pillow_lanczos(double x) {
  if (-3.0 <= x && x < 3.0) return sinc(x) * sinc(x / 3);
  return 0.0;
}

// ---- PyTorch's antialiasing filters (UpSampleKernel.cpp, HelperInterpLinear/Cubic::aa_filter):
// the cubic is Keys' a = -0.5 too, but its outer piece is evaluated in another order, which can
// change the last bit of a weight.
double torch_linear(double x) {
  x = std::abs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

double torch_cubic(double x) {
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

struct Kernel {
  double (*fn)(double);
  double support;  // at scale 1
};

// One axis of a separable resize: for each output index, the first input index, the number of
// taps and that many fixed-point weights (out * taps_stride, zero-padded).
struct AxisTaps {
  std::size_t taps_stride = 0;
  std::vector<std::size_t> first;
  std::vector<std::size_t> count;
  std::vector<std::int32_t> weights;
  int precision = 0;  // weights are value * 2^precision, rounded half away from zero
};

// The double weights, computed as both libraries do (precompute_coeffs in Pillow,
// _compute_indices_min_size_weights_aa in PyTorch: the same arithmetic).
struct AxisWeights {
  std::size_t ksize = 0;
  std::vector<std::size_t> first, count;
  std::vector<double> w;
  double max_weight = 0.0;
};

AxisWeights axis_weights(std::size_t in_size, std::size_t out_size, Kernel kernel) {
  AxisWeights a;
  const double scale = static_cast<double>(in_size) / static_cast<double>(out_size);
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = kernel.support * filterscale;
  a.ksize = static_cast<std::size_t>(std::ceil(support)) * 2 + 1;
  const double inv = 1.0 / filterscale;
  a.first.resize(out_size);
  a.count.resize(out_size);
  a.w.assign(out_size * a.ksize, 0.0);
  for (std::size_t xx = 0; xx < out_size; ++xx) {
    const double center = (static_cast<double>(xx) + 0.5) * scale;
    // C's (int) conversion truncates toward zero; both libraries clamp afterwards.
    long long xmin = static_cast<long long>(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    long long xmax = static_cast<long long>(center + support + 0.5);
    if (xmax > static_cast<long long>(in_size)) xmax = static_cast<long long>(in_size);
    long long n = std::clamp(xmax - xmin, 0LL, static_cast<long long>(a.ksize));
    double* k = &a.w[xx * a.ksize];
    double total = 0.0;
    for (long long x = 0; x < n; ++x) {
      const double w = kernel.fn((static_cast<double>(x + xmin) - center + 0.5) * inv);
      k[x] = w;
      total += w;
    }
    if (total != 0.0) {
      for (long long x = 0; x < n; ++x) {
        k[x] /= total;
        a.max_weight = std::max(a.max_weight, k[x]);
      }
    }
    a.first[xx] = static_cast<std::size_t>(xmin);
    a.count[xx] = static_cast<std::size_t>(n);
  }
  return a;
}

std::int32_t round_half_away(double v) {
  return static_cast<std::int32_t>(v < 0 ? -0.5 + v : 0.5 + v);
}

AxisTaps to_fixed(const AxisWeights& a, int precision) {
  AxisTaps t;
  t.taps_stride = a.ksize;
  t.first = a.first;
  t.count = a.count;
  t.precision = precision;
  t.weights.resize(a.w.size());
  const double one = static_cast<double>(1 << precision);
  for (std::size_t i = 0; i < a.w.size(); ++i) t.weights[i] = round_half_away(a.w[i] * one);
  return t;
}

// Pillow: PRECISION_BITS = 32 - 8 - 2.
AxisTaps pillow_taps(std::size_t in_size, std::size_t out_size, Kernel kernel) {
  return to_fixed(axis_weights(in_size, out_size, kernel), 22);
}

// PyTorch (_compute_index_ranges_int16_weights): the most bits that keep the largest weight,
// rounded, below 2^15, at most 22.
AxisTaps torch_taps(std::size_t in_size, std::size_t out_size, Kernel kernel) {
  const AxisWeights a = axis_weights(in_size, out_size, kernel);
  int precision = 0;
  for (precision = 0; precision < 22; ++precision) {
    const int next = static_cast<int>(0.5 + a.max_weight * static_cast<double>(1 << (precision + 1)));
    if (next >= (1 << 15)) break;
  }
  AxisTaps t = to_fixed(a, precision);
  // The weights are stored as int16 there; the rounding above keeps them in range.
  for (auto& w : t.weights) w = static_cast<std::int16_t>(w);
  return t;
}

// Convolves along the slow axis: `in` holds in_rows rows of row_len bytes, `out` gets
// out_rows rows. A whole row at a time so that the inner loop runs over contiguous bytes and
// vectorises. int32 sums, as in both libraries: the weights' scale keeps 255 × sum|w| below 2^31.
void convolve_rows(const std::uint8_t* in, std::size_t row_len, const AxisTaps& taps, std::uint8_t* out,
                   std::size_t out_rows) {
  const std::int32_t half = std::int32_t{1} << (taps.precision - 1);
  const int shift = taps.precision;
  std::vector<std::int32_t> acc(row_len);
  for (std::size_t y = 0; y < out_rows; ++y) {
    std::fill(acc.begin(), acc.end(), half);
    const std::int32_t* k = &taps.weights[y * taps.taps_stride];
    for (std::size_t i = 0; i < taps.count[y]; ++i) {
      const std::uint8_t* row = in + (taps.first[y] + i) * row_len;
      const std::int32_t wi = k[i];
      std::int32_t* a = acc.data();
      for (std::size_t j = 0; j < row_len; ++j) a[j] += static_cast<std::int32_t>(row[j]) * wi;
    }
    std::uint8_t* orow = out + y * row_len;
    // >> of a negative int is an arithmetic shift (C++20), as the libraries' shifts on x86
    for (std::size_t j = 0; j < row_len; ++j) orow[j] = static_cast<std::uint8_t>(std::clamp(acc[j] >> shift, 0, 255));
  }
}

// in: rows × cols RGB pixels → out: cols × rows, in cache-sized tiles.
void transpose_rgb(const std::uint8_t* in, std::size_t cols, std::size_t rows, std::uint8_t* out) {
  constexpr std::size_t kTile = 32;
  for (std::size_t r0 = 0; r0 < rows; r0 += kTile) {
    const std::size_t r1 = std::min(rows, r0 + kTile);
    for (std::size_t c0 = 0; c0 < cols; c0 += kTile) {
      const std::size_t c1 = std::min(cols, c0 + kTile);
      for (std::size_t r = r0; r < r1; ++r) {
        for (std::size_t c = c0; c < c1; ++c) {
          const std::uint8_t* p = in + (r * cols + c) * 3;
          std::uint8_t* q = out + (c * rows + r) * 3;
          q[0] = p[0];
          q[1] = p[1];
          q[2] = p[2];
        }
      }
    }
  }
}

void check_sizes(const RgbImage& image, std::size_t width, std::size_t height) {
  check(image.width > 0 && image.height > 0 && image.pixels.size() == image.width * image.height * 3,
        "resize: the input image is empty or its pixel buffer does not match ", image.width, "x", image.height);
  check(width > 0 && height > 0, "resize: the target size ", width, "x", height, " is empty");
  // Pillow and PyTorch index with int; far beyond any real image anyway.
  constexpr std::size_t kMaxSide = 1u << 20;
  check(width <= kMaxSide && height <= kMaxSide && image.width <= kMaxSide && image.height <= kMaxSide,
        "resize: image sides above ", kMaxSide, " pixels are not supported");
}

// Horizontal pass over `rows` rows of `in` (in_w pixels each) into `out` (out_w pixels each).
// It runs as a row convolution (convolve_rows) of strips of the image transposed: same integer
// sums, but contiguous inner loops; a strip's buffers stay in cache and are reused.
void horizontal_pass(const std::uint8_t* in, std::size_t in_w, std::size_t rows, const AxisTaps& taps,
                     std::uint8_t* out, std::size_t out_w) {
  constexpr std::size_t kStrip = 32;
  std::vector<std::uint8_t> t(in_w * kStrip * 3), u(out_w * kStrip * 3);
  for (std::size_t r0 = 0; r0 < rows; r0 += kStrip) {
    const std::size_t n = std::min(kStrip, rows - r0);
    transpose_rgb(in + r0 * in_w * 3, in_w, n, t.data());
    convolve_rows(t.data(), n * 3, taps, u.data(), out_w);
    transpose_rgb(u.data(), n, out_w, out + r0 * out_w * 3);
  }
}

template <typename MakeTaps>
RgbImage separable(const RgbImage& image, std::size_t width, std::size_t height, MakeTaps make_taps) {
  // Horizontal first, as both libraries do, with a uint8 image in between.
  RgbImage mid;
  const RgbImage* src = &image;
  if (width != image.width) {
    const AxisTaps taps = make_taps(image.width, width);
    mid = RgbImage{width, image.height, std::vector<std::uint8_t>(width * image.height * 3)};
    horizontal_pass(image.pixels.data(), image.width, image.height, taps, mid.pixels.data(), width);
    if (height == image.height) return mid;
    src = &mid;
  }
  const AxisTaps taps = make_taps(image.height, height);
  RgbImage out{src->width, height, std::vector<std::uint8_t>(src->width * height * 3)};
  convolve_rows(src->pixels.data(), src->width * 3, taps, out.pixels.data(), height);
  return out;
}

// Pillow's NEAREST: an affine transform (ImagingScaleAffine) stepping a double source position
// by in/out from half a step in; a position that lands outside leaves the pixel 0.
RgbImage pillow_nearest(const RgbImage& image, std::size_t width, std::size_t height) {
  auto coord = [](double v) { return v < 0.0 ? -1LL : static_cast<long long>(v); };
  const double ax = static_cast<double>(static_cast<float>(image.width)) / static_cast<double>(width);
  const double ay = static_cast<double>(static_cast<float>(image.height)) / static_cast<double>(height);
  std::vector<long long> xin(width);
  double xo = ax * 0.5;
  for (std::size_t x = 0; x < width; ++x, xo += ax) xin[x] = coord(xo);
  RgbImage out{width, height, std::vector<std::uint8_t>(width * height * 3, 0)};
  double yo = ay * 0.5;
  for (std::size_t y = 0; y < height; ++y, yo += ay) {
    const long long yi = coord(yo);
    if (yi < 0 || yi >= static_cast<long long>(image.height)) continue;
    for (std::size_t x = 0; x < width; ++x) {
      if (xin[x] < 0 || xin[x] >= static_cast<long long>(image.width)) continue;
      const std::uint8_t* p = image.at(static_cast<std::size_t>(xin[x]), static_cast<std::size_t>(yi));
      std::copy(p, p + 3, out.pixels.data() + (y * width + x) * 3);
    }
  }
  return out;
}

}  // namespace

std::optional<ResampleFilter> filter_from_pil_code(long long code) {
  switch (code) {
    case 0: return ResampleFilter::nearest;
    case 1: return ResampleFilter::lanczos;
    case 2: return ResampleFilter::bilinear;
    case 3: return ResampleFilter::bicubic;
    case 4: return ResampleFilter::box;
    case 5: return ResampleFilter::hamming;
    default: return std::nullopt;
  }
}

std::string_view filter_name(ResampleFilter filter) {
  switch (filter) {
    case ResampleFilter::nearest: return "nearest";
    case ResampleFilter::box: return "box";
    case ResampleFilter::bilinear: return "bilinear";
    case ResampleFilter::hamming: return "hamming";
    case ResampleFilter::bicubic: return "bicubic";
    case ResampleFilter::lanczos: return "lanczos";
  }
  return "?";
}

RgbImage resize_pillow(const RgbImage& image, std::size_t width, std::size_t height, ResampleFilter filter) {
  check_sizes(image, width, height);
  if (width == image.width && height == image.height) return image;
  Kernel kernel{};
  switch (filter) {
    case ResampleFilter::nearest: return pillow_nearest(image, width, height);
    case ResampleFilter::box: kernel = {pillow_box, 0.5}; break;
    case ResampleFilter::bilinear: kernel = {pillow_bilinear, 1.0}; break;
    case ResampleFilter::hamming: kernel = {pillow_hamming, 1.0}; break;
    case ResampleFilter::bicubic: kernel = {pillow_bicubic, 2.0}; break;
    case ResampleFilter::lanczos: kernel = {pillow_lanczos, 3.0}; break;
  }
  return separable(image, width, height,
                   [&](std::size_t in, std::size_t out) { return pillow_taps(in, out, kernel); });
}

RgbImage resize_torch_uint8(const RgbImage& image, std::size_t width, std::size_t height, ResampleFilter filter) {
  check_sizes(image, width, height);
  Kernel kernel{};
  switch (filter) {
    case ResampleFilter::bilinear: kernel = {torch_linear, 1.0}; break;  // interp_size 2 × 0.5
    case ResampleFilter::bicubic: kernel = {torch_cubic, 2.0}; break;    // interp_size 4 × 0.5
    default:
      throw make_error("resize: the torchvision backend resizes uint8 images with bilinear or bicubic only, not ",
                       filter_name(filter));
  }
  if (width == image.width && height == image.height) return image;
  return separable(image, width, height,
                   [&](std::size_t in, std::size_t out) { return torch_taps(in, out, kernel); });
}

namespace {

// One axis of a float resize: `outer` blocks, each of in_len positions along the axis holding
// `inner` contiguous values, to out_len positions; sums in double.
void float_pass(const float* in, std::size_t in_len, float* out, std::size_t out_len, std::size_t outer,
                std::size_t inner, const AxisWeights& a) {
  for (std::size_t b = 0; b < outer; ++b) {
    const float* src = in + b * in_len * inner;
    float* dst = out + b * out_len * inner;
    for (std::size_t o = 0; o < out_len; ++o) {
      const double* w = &a.w[o * a.ksize];
      for (std::size_t c = 0; c < inner; ++c) {
        double acc = 0.0;
        for (std::size_t t = 0; t < a.count[o]; ++t) acc += w[t] * src[(a.first[o] + t) * inner + c];
        dst[o * inner + c] = static_cast<float>(acc);
      }
    }
  }
}

}  // namespace

std::vector<float> resize_float_aa(const float* in, std::size_t in_h, std::size_t in_w, std::size_t channels,
                                   std::size_t out_h, std::size_t out_w, ResampleFilter filter) {
  check(in_h > 0 && in_w > 0 && out_h > 0 && out_w > 0 && channels > 0, "resize: empty table (", in_h, "x", in_w, "x",
        channels, " to ", out_h, "x", out_w, ")");
  Kernel kernel{};
  switch (filter) {
    case ResampleFilter::bilinear: kernel = {torch_linear, 1.0}; break;
    case ResampleFilter::bicubic: kernel = {torch_cubic, 2.0}; break;
    default: throw make_error("resize: antialiased float resizing is bilinear or bicubic only, not ", filter_name(filter));
  }
  std::vector<float> mid(in_h * out_w * channels);
  if (in_w == out_w)
    mid.assign(in, in + in_h * in_w * channels);
  else
    float_pass(in, in_w, mid.data(), out_w, in_h, channels, axis_weights(in_w, out_w, kernel));
  if (in_h == out_h) return mid;
  std::vector<float> out(out_h * out_w * channels);
  float_pass(mid.data(), in_h, out.data(), out_h, 1, out_w * channels, axis_weights(in_h, out_h, kernel));
  return out;
}

std::vector<float> resize_rows_linear(const float* in, std::size_t rows, std::size_t channels, std::size_t out_rows) {
  check(rows > 0 && out_rows > 0 && channels > 0, "resize: empty table");
  std::vector<float> out(out_rows * channels);
  // ATen's area_pixel_compute_source_index and guard_index_and_lambda, in float as there.
  const float scale = static_cast<float>(rows) / static_cast<float>(out_rows);
  for (std::size_t o = 0; o < out_rows; ++o) {
    const float src = std::max(scale * (static_cast<float>(o) + 0.5f) - 0.5f, 0.0f);
    const std::size_t i0 = std::min(static_cast<std::size_t>(src), rows - 1);
    const std::size_t i1 = i0 + (i0 < rows - 1 ? 1 : 0);
    const float l1 = std::clamp(src - static_cast<float>(i0), 0.0f, 1.0f), l0 = 1.0f - l1;
    for (std::size_t c = 0; c < channels; ++c) out[o * channels + c] = l0 * in[i0 * channels + c] + l1 * in[i1 * channels + c];
  }
  return out;
}

}  // namespace il::image
