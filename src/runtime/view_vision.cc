#include "runtime/view_vision.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace il::runtime {
namespace {

// A 3 × 3 convolution of stride 2 and padding 1 over a side of s: ⌊(s − 1) / 2⌋ + 1 outputs.
std::size_t halved(std::size_t s) { return (s - 1) / 2 + 1; }

std::size_t side_index(const models::ViewVisionSpec& v, std::size_t side, const std::string& what) {
  const auto it = std::find(v.sides.begin(), v.sides.end(), side);
  if (it == v.sides.end()) {
    std::string sides;
    for (std::size_t s : v.sides) sides += (sides.empty() ? "" : ", ") + std::to_string(s * v.patch);
    throw make_error(what, ": a view of ", side * v.patch, " pixels; this model's tables cover views of ", sides,
                     " pixels");
  }
  return static_cast<std::size_t>(it - v.sides.begin());
}

struct ViewRef {
  const float* rows = nullptr;  // its patch rows
  std::size_t side = 0, patches2 = 0, queries = 0, query_row = 0;
};

std::size_t queries_for(const models::ViewVisionSpec& v, std::size_t patches) { return v.queries_for(patches); }

// The taps of a 3 × 3 convolution (padding 1, `stride`) over a view of side s_in whose rows
// start at `in0`, for an output of side s_out: 9 source rows per output position, −1 outside.
void add_conv_taps(std::vector<int32_t>& gather, std::size_t in0, std::size_t s_in, std::size_t s_out,
                   std::size_t stride) {
  for (std::size_t oy = 0; oy < s_out; ++oy)
    for (std::size_t ox = 0; ox < s_out; ++ox)
      for (int ky = 0; ky < 3; ++ky)
        for (int kx = 0; kx < 3; ++kx) {
          const long y = static_cast<long>(oy * stride) + ky - 1, x = static_cast<long>(ox * stride) + kx - 1;
          const bool in = y >= 0 && x >= 0 && y < static_cast<long>(s_in) && x < static_cast<long>(s_in);
          gather.push_back(in ? static_cast<int32_t>(in0 + static_cast<std::size_t>(y) * s_in + static_cast<std::size_t>(x))
                              : -1);
        }
}

// The batch of one stage: a sequence per view of side_out², its taps into the previous rows.
plan::Batch conv_batch(const std::vector<ViewRef>& views, std::size_t (*in_side)(const ViewRef&),
                       std::size_t (*out_side)(const ViewRef&), std::size_t stride) {
  plan::Batch b;
  b.seq_starts.push_back(0);
  std::size_t in0 = 0;
  for (const ViewRef& v : views) {
    const std::size_t si = in_side(v), so = out_side(v);
    add_conv_taps(b.gather, in0, si, so, stride);
    in0 += si * si;
    b.tokens.insert(b.tokens.end(), so * so, 0);
    b.seq_starts.push_back(static_cast<int32_t>(b.tokens.size()));
  }
  return b;
}

std::size_t side0(const ViewRef& v) { return v.side; }
std::size_t side1(const ViewRef& v) { return halved(v.side); }
std::size_t side2(const ViewRef& v) { return halved(halved(v.side)); }

// One CHW view of side `side` pixels as patch rows appended to `rows`.
void append_patches(const float* chw, std::size_t side, std::size_t patch, std::vector<float>& rows) {
  const std::size_t g = side / patch;
  for (std::size_t py = 0; py < g; ++py)
    for (std::size_t px = 0; px < g; ++px)
      for (std::size_t c = 0; c < 3; ++c)
        for (std::size_t y = 0; y < patch; ++y) {
          const float* src = chw + (c * side + py * patch + y) * side + px * patch;
          rows.insert(rows.end(), src, src + patch);
        }
}

// v1's page rows: the tiles as one grid of (rows · m) × (columns · m) positions, a newline after
// each grid row; the global view's n × n the same way; then the separator (the reference's
// order: local, global, separator).
void assemble_grid_pages(const models::ViewVisionSpec& v, const std::vector<const PatchImage*>& pages,
                         const std::vector<Matrix>& view_rows, std::vector<Matrix>& out) {
  const std::size_t cols = v.rows.cols;
  std::size_t next_view = 0;
  for (std::size_t p = 0; p < pages.size(); ++p) {
    const PatchImage& page = *pages[p];
    float* dst = out[p].data.data();
    const auto put = [&](const float* row) { dst = std::copy_n(row, cols, dst); };
    const std::size_t tiles = page.view_sides.size() - 1;
    if (tiles > 0) {
      const std::size_t wt = static_cast<std::size_t>(page.tile_grid[0]), ht = static_cast<std::size_t>(page.tile_grid[1]);
      const std::size_t m = side2({nullptr, static_cast<std::size_t>(page.view_sides[0])});
      for (std::size_t gy = 0; gy < ht * m; ++gy) {
        for (std::size_t gx = 0; gx < wt * m; ++gx) {
          const Matrix& t = view_rows[next_view + (gy / m) * wt + gx / m];
          put(t.data.data() + ((gy % m) * m + gx % m) * cols);
        }
        put(v.newline.data());
      }
    }
    const Matrix& g = view_rows[next_view + tiles];
    const std::size_t n = side2({nullptr, static_cast<std::size_t>(page.view_sides.back())});
    for (std::size_t y = 0; y < n; ++y) {
      for (std::size_t x = 0; x < n; ++x) put(g.data.data() + (y * n + x) * cols);
      put(v.newline.data());
    }
    put(v.separator.data());
    check(dst == out[p].data.data() + out[p].data.size(), "view vision: page ", p, " rows do not add up");
    next_view += tiles + 1;
  }
}

}  // namespace

PatchImage make_view_page(const float* global, std::size_t global_side, const float* tiles, std::size_t tile_count,
                          std::size_t tile_side, std::size_t patch) {
  check(patch > 0 && global_side % patch == 0 && (tile_count == 0 || tile_side % patch == 0), "image: views of ",
        global_side, " and ", tile_side, " pixels are not whole patches of ", patch);
  PatchImage page;
  page.patch_dim = 3 * patch * patch;
  for (std::size_t t = 0; t < tile_count; ++t) {
    append_patches(tiles + t * 3 * tile_side * tile_side, tile_side, patch, page.rows);
    page.view_sides.push_back(static_cast<int>(tile_side / patch));
  }
  append_patches(global, global_side, patch, page.rows);
  page.view_sides.push_back(static_cast<int>(global_side / patch));
  const auto g = static_cast<int>(global_side / patch);
  page.grid_thw = {1, g, g};
  return page;
}

void check_view_page(const models::ViewVisionSpec& v, const PatchImage& page, std::size_t max_tokens,
                     const std::string& what) {
  check(!page.view_sides.empty(), what, ": no views (this model reads pages as square views)");
  check(page.patch_dim == 3 * v.patch * v.patch, what, ": patch rows of ", page.patch_dim, " values; the model takes ",
        3 * v.patch * v.patch, " (patches of ", v.patch, " pixels)");
  std::size_t patches = 0;
  for (std::size_t i = 0; i < page.view_sides.size(); ++i) {
    const std::string w = what + " view " + std::to_string(i);
    check(page.view_sides[i] > 0, w, ": side ", page.view_sides[i], " is not positive");
    const std::size_t s = static_cast<std::size_t>(page.view_sides[i]);
    (void)side_index(v, s, w);
    const std::size_t p2 = side2({nullptr, s}) * side2({nullptr, s});
    check(s * s <= max_tokens && p2 + (v.clip ? 1 : queries_for(v, p2)) <= max_tokens, w, ": ", s * s,
          " patches do not fit one batch of ", max_tokens, " tokens");
    patches += s * s;
  }
  if (v.clip && page.view_sides.size() > 1) {
    // v1 tiles sit on a grid (image_spatial_crop): columns × rows of them, all of one side.
    const std::size_t tiles = page.view_sides.size() - 1;
    check(page.tile_grid[0] > 0 && page.tile_grid[1] > 0 &&
              static_cast<std::size_t>(page.tile_grid[0]) * static_cast<std::size_t>(page.tile_grid[1]) == tiles,
          what, ": ", tiles, " tiles on a grid of ", page.tile_grid[0], " × ", page.tile_grid[1],
          " (image_spatial_crop: columns, rows)");
    for (std::size_t i = 1; i < tiles; ++i)
      check(page.view_sides[i] == page.view_sides[0], what, ": tiles of different sides (", page.view_sides[0], ", ",
            page.view_sides[i], ")");
  }
  check(page.rows.size() == patches * page.patch_dim, what, ": ", page.rows.size(), " values for views of ", patches,
        " patches of ", page.patch_dim);
  for (std::size_t k = 0; k < page.rows.size(); ++k)
    check(std::isfinite(page.rows[k]), what, ": pixel value ", k, " is not finite");
}

std::size_t view_page_rows(const models::ViewVisionSpec& v, const PatchImage& page, std::size_t max_tokens) {
  check_view_page(v, page, max_tokens, "image");
  return v.page_rows(page.view_sides, page.tile_grid);
}

ViewVisionResult run_view_vision(const models::ViewVisionSpec& v, plan::Executor& exec,
                                 const std::vector<const PatchImage*>& pages, bool keep_sam) {
  const std::size_t max_tokens = exec.max_tokens();
  const std::size_t patch_dim = 3 * v.patch * v.patch;
  // Every view of every page, in order; its query rows land in its page's matrix.
  std::vector<ViewRef> views;
  std::vector<std::size_t> page_of;
  ViewVisionResult out;
  for (std::size_t p = 0; p < pages.size(); ++p) {
    const PatchImage& page = *pages[p];
    check_view_page(v, page, max_tokens, "image " + std::to_string(p));
    const float* rows = page.rows.data();
    std::size_t row = 0;
    for (int s : page.view_sides) {
      ViewRef r;
      r.rows = rows;
      r.side = static_cast<std::size_t>(s);
      const std::size_t s2 = side2(r);
      r.patches2 = s2 * s2;
      r.queries = v.clip ? r.patches2 : queries_for(v, r.patches2);
      r.query_row = r.patches2 <= v.small_max_patches ? 0 : v.queries_small;
      rows += r.side * r.side * patch_dim;
      views.push_back(r);
      page_of.push_back(p);
      row += r.queries;
    }
    out.pages.emplace_back(v.clip ? v.page_rows(page.view_sides, page.tile_grid) : row + 1, v.rows.cols);
  }
  std::vector<Matrix> view_rows;  // v1: each view's rows, laid out per page at the end
  std::vector<std::size_t> page_row(pages.size(), 0);
  std::vector<float> buf;
  for (std::size_t first = 0; first < views.size();) {
    // A group of views whose SAM tokens and encoder tokens fit one batch.
    std::size_t last = first, sam_tokens = 0, enc_tokens = 0;
    while (last < views.size()) {
      const ViewRef& r = views[last];
      const std::size_t st = r.side * r.side, et = r.patches2 + (v.clip ? 1 : r.queries);
      if (last > first && (sam_tokens + st > max_tokens || enc_tokens + et > max_tokens)) break;
      sam_tokens += st;
      enc_tokens += et;
      ++last;
    }
    const std::vector<ViewRef> group(views.begin() + static_cast<std::ptrdiff_t>(first),
                                     views.begin() + static_cast<std::ptrdiff_t>(last));

    // "sam": a token per patch, positions into the side's block of the position table.
    plan::Batch sam = conv_batch(group, side0, side0, 1);
    sam.patch_dim = patch_dim;
    for (const ViewRef& r : group) {
      const std::size_t base = v.position_rows[side_index(v, r.side, "view")];
      for (std::size_t i = 0; i < r.side * r.side; ++i) sam.positions.push_back(static_cast<int32_t>(base + i));
      sam.patches.insert(sam.patches.end(), r.rows, r.rows + r.side * r.side * patch_dim);
    }
    exec.set_batch(sam);
    exec.run("sam");
    exec.set_batch(conv_batch(group, side0, side1, 2));
    exec.run("sam_down1");
    exec.set_batch(conv_batch(group, side1, side2, 2));
    exec.run("sam_down2");
    if (keep_sam) {
      buf.resize(max_tokens * v.down2_cols);
      exec.read(plan::View{v.down2, 0, v.down2_cols}, buf.data());
      std::size_t row = 0;
      for (const ViewRef& r : group) {
        Matrix m(r.patches2, v.down2_cols);
        std::copy_n(buf.begin() + static_cast<std::ptrdiff_t>(row * v.down2_cols), m.data.size(), m.data.begin());
        row += r.patches2;
        out.sam.push_back(std::move(m));
      }
    }

    if (v.clip) {
      // v1's "encoder": per view its class token, then its SAM rows (gathered), their token ids
      // the rows of the side's block of the embedding table (class, positions); bidirectional.
      plan::Batch enc;
      enc.seq_starts.push_back(0);
      std::size_t sam_row = 0;
      for (const ViewRef& r : group) {
        const std::size_t base = v.clip_position_rows[side_index(v, r.side, "view")];
        enc.gather.push_back(-1);
        for (std::size_t i = 0; i < r.patches2; ++i) enc.gather.push_back(static_cast<int32_t>(sam_row + i));
        for (std::size_t i = 0; i <= r.patches2; ++i) {
          enc.tokens.push_back(static_cast<int32_t>(base + i));
          enc.positions.push_back(static_cast<int32_t>(i));
        }
        sam_row += r.patches2;
        enc.seq_starts.push_back(static_cast<int32_t>(enc.tokens.size()));
      }
      exec.set_batch(enc);
      exec.run("encoder");
      buf.resize(enc.tokens.size() * v.rows.cols);
      exec.read(v.rows, buf.data());
      std::size_t tok = 0;
      for (const ViewRef& r : group) {
        Matrix m(r.patches2, v.rows.cols);
        std::copy_n(buf.begin() + static_cast<std::ptrdiff_t>((tok + 1) * v.rows.cols), m.data.size(), m.data.begin());
        view_rows.push_back(std::move(m));
        tok += 1 + r.patches2;
      }
      first = last;
      continue;
    }

    // "encoder": per view its SAM rows (injected), then its queries (embedding rows).
    plan::Batch enc;
    enc.seq_starts.push_back(0);
    std::size_t sam_row = 0;
    for (const ViewRef& r : group) {
      for (std::size_t i = 0; i < r.patches2; ++i) {
        enc.tokens.push_back(0);
        enc.inject_rows.push_back(static_cast<int32_t>(sam_row + i));
      }
      for (std::size_t q = 0; q < r.queries; ++q) {
        enc.tokens.push_back(static_cast<int32_t>(r.query_row + q));
        enc.inject_rows.push_back(-1);
      }
      for (std::size_t i = 0; i < r.patches2 + r.queries; ++i) enc.positions.push_back(static_cast<int32_t>(i));
      enc.causal_prefix.push_back(static_cast<int32_t>(r.patches2));
      sam_row += r.patches2;
      enc.seq_starts.push_back(static_cast<int32_t>(enc.tokens.size()));
    }
    exec.set_batch(enc);
    exec.run("encoder");
    buf.resize(enc.tokens.size() * v.rows.cols);
    exec.read(v.rows, buf.data());
    std::size_t tok = 0;
    for (std::size_t i = first; i < last; ++i) {
      const ViewRef& r = views[i];
      Matrix& m = out.pages[page_of[i]];
      std::copy_n(buf.begin() + static_cast<std::ptrdiff_t>((tok + r.patches2) * v.rows.cols), r.queries * v.rows.cols,
                  m.data.begin() + static_cast<std::ptrdiff_t>(page_row[page_of[i]] * v.rows.cols));
      page_row[page_of[i]] += r.queries;
      tok += r.patches2 + r.queries;
    }
    first = last;
  }
  if (v.clip) {
    assemble_grid_pages(v, pages, view_rows, out.pages);
    return out;
  }
  for (std::size_t p = 0; p < pages.size(); ++p)
    std::copy(v.separator.begin(), v.separator.end(),
              out.pages[p].data.begin() + static_cast<std::ptrdiff_t>(page_row[p] * v.rows.cols));
  return out;
}

}  // namespace il::runtime
