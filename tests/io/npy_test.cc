// The .npy reader (io/npy.h): the format versions and element types it takes, and the clear
// refusals of everything else (wrong magic, Fortran order, big-endian or other types, a header or
// data that does not match the file).
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "core/error.h"
#include "io/npy.h"

namespace il::io {
namespace {

std::string npy(const std::string& descr, const std::string& shape, const std::string& payload, int version = 1,
                const std::string& order = "False") {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + order + ", 'shape': " + shape + ", }";
  const std::size_t prefix = version == 1 ? 10 : 12;
  while ((prefix + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  const std::size_t n = dict.size();
  out += static_cast<char>(n & 0xff);
  out += static_cast<char>((n >> 8) & 0xff);
  if (version > 1) out += std::string(2, '\0');
  return out + dict + payload;
}

template <typename T>
std::string bytes(std::initializer_list<T> v) {
  std::string s(v.size() * sizeof(T), '\0');
  std::size_t i = 0;
  for (T x : v) std::memcpy(&s[sizeof(T) * i++], &x, sizeof(T));
  return s;
}

TEST(Npy, ReadsEveryTypeAndVersion) {
  const NpyArray f = parse_npy(npy("<f4", "(2, 3)", bytes<float>({1, 2, 3, 4, 5, 6.5f})), "a.npy");
  EXPECT_EQ(f.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.dtype, "f4");
  EXPECT_DOUBLE_EQ(f.values.at(5), 6.5);
  const NpyArray i = parse_npy(npy("<i8", "(3,)", bytes<int64_t>({1, -2, 3})), "b.npy");
  EXPECT_EQ(i.values, (std::vector<double>{1, -2, 3}));
  const NpyArray d = parse_npy(npy("<f8", "()", bytes<double>({1.25}), 2), "c.npy");
  EXPECT_TRUE(d.shape.empty());
  EXPECT_EQ(d.values, std::vector<double>{1.25});
  const NpyArray e = parse_npy(npy("<i4", "(0, 4)", ""), "d.npy");
  EXPECT_EQ(e.size(), 0u);
}

void expect_refused(const std::string& file, const std::string& what) {
  try {
    (void)parse_npy(file, "x.npy");
    ADD_FAILURE() << "accepted; expected a refusal mentioning " << what;
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("x.npy"), std::string::npos) << err.what();
    EXPECT_NE(std::string(err.what()).find(what), std::string::npos) << err.what();
  }
}

TEST(Npy, RefusesWhatItCannotRead) {
  expect_refused("PK\x03\x04 not numpy", "magic");
  expect_refused(npy("<f4", "(2,)", bytes<float>({1, 2}), 1, "True"), "Fortran");
  expect_refused(npy(">f4", "(2,)", bytes<float>({1, 2})), "dtype");
  expect_refused(npy("<f2", "(2,)", "abcd"), "dtype");
  expect_refused(npy("<f4", "(3,)", bytes<float>({1, 2})), "bytes for 3 elements");
  expect_refused(npy("<f4", "(2, x)", bytes<float>({1, 2})), "shape");
  expect_refused(npy("<f4", "(99999999999, 99999999999)", ""), "too large");
  std::string truncated = npy("<f4", "(2,)", bytes<float>({1, 2}));
  truncated.resize(20);
  expect_refused(truncated, "header");
}

}  // namespace
}  // namespace il::io
