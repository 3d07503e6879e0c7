#include "text/sentencepiece_model.h"

#include <cstring>

#include "core/error.h"

namespace il::text {
namespace {

enum Wire : int { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// A cursor over one message's bytes; every read checks the bounds and names `source`.
class Reader {
 public:
  Reader(std::string_view bytes, const std::string& source, const char* message)
      : bytes_(bytes), source_(source), message_(message) {}

  bool done() const { return pos_ >= bytes_.size(); }

  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      check(pos_ < bytes_.size(), source_, ": ", message_, " ends inside a number");
      const auto b = static_cast<unsigned char>(bytes_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    throw make_error(source_, ": ", message_, " holds a number longer than 10 bytes");
  }

  // The next field's number and wire type.
  std::pair<uint32_t, int> key() {
    const uint64_t k = varint();
    const uint64_t field = k >> 3;
    check(field >= 1 && field < (1u << 29), source_, ": ", message_, " holds field number ", field);
    return {static_cast<uint32_t>(field), static_cast<int>(k & 7)};
  }

  std::string_view bytes() {
    const uint64_t n = varint();
    check(n <= bytes_.size() - pos_, source_, ": ", message_, " has a field of ", n, " bytes past its end");
    const std::string_view out = bytes_.substr(pos_, n);
    pos_ += n;
    return out;
  }

  float fixed32_float() {
    check(bytes_.size() - pos_ >= 4, source_, ": ", message_, " ends inside a float");
    uint32_t u = 0;
    for (int i = 0; i < 4; ++i) u |= static_cast<uint32_t>(static_cast<unsigned char>(bytes_[pos_ + i])) << (8 * i);
    pos_ += 4;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }

  void skip(int wire) {
    switch (wire) {
      case kVarint: (void)varint(); return;
      case kFixed64:
        check(bytes_.size() - pos_ >= 8, source_, ": ", message_, " ends inside a 64-bit field");
        pos_ += 8;
        return;
      case kLengthDelimited: (void)bytes(); return;
      case kFixed32:
        check(bytes_.size() - pos_ >= 4, source_, ": ", message_, " ends inside a 32-bit field");
        pos_ += 4;
        return;
      default: throw make_error(source_, ": ", message_, " holds wire type ", wire, " (groups are not read)");
    }
  }

  void expect(int wire, int want, uint32_t field) const {
    check(wire == want, source_, ": ", message_, " field ", field, " has wire type ", wire, ", expected ", want);
  }

 private:
  std::string_view bytes_;
  const std::string& source_;
  const char* message_;
  std::size_t pos_ = 0;
};

// proto2 int32 values are sign-extended to 64 bits on the wire (-1 takes ten bytes).
int32_t as_int32(uint64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

SentencePieceModel::Piece read_piece(std::string_view bytes, const std::string& source, std::size_t id) {
  SentencePieceModel::Piece p;
  Reader r(bytes, source, "a SentencePiece entry");
  bool has_text = false;
  while (!r.done()) {
    const auto [field, wire] = r.key();
    if (field == 1) {
      r.expect(wire, kLengthDelimited, field);
      p.text = std::string(r.bytes());
      has_text = true;
    } else if (field == 2) {
      r.expect(wire, kFixed32, field);
      p.score = r.fixed32_float();
    } else if (field == 3) {
      r.expect(wire, kVarint, field);
      const uint64_t t = r.varint();
      check(t >= 1 && t <= 6, source, ": piece ", id, " has type ", t, " (1..6: normal, unknown, control, ",
            "user-defined, unused, byte)");
      p.type = static_cast<SentencePieceModel::PieceType>(t);
    } else {
      r.skip(wire);
    }
  }
  check(has_text && !p.text.empty(), source, ": piece ", id, " is empty");
  return p;
}

void read_trainer_spec(std::string_view bytes, const std::string& source, SentencePieceModel& m) {
  Reader r(bytes, source, "the trainer spec");
  while (!r.done()) {
    const auto [field, wire] = r.key();
    if (field == 3 || field == 24 || field == 35 || (field >= 40 && field <= 43)) {
      r.expect(wire, kVarint, field);
      const uint64_t v = r.varint();
      if (field == 3) {
        check(v >= 1 && v <= 4, source, ": trainer_spec.model_type ", v, " (1..4: unigram, bpe, word, char)");
        m.model_type = static_cast<SentencePieceModel::ModelType>(v);
      }
      if (field == 24) m.treat_whitespace_as_suffix = v != 0;
      if (field == 35) m.byte_fallback = v != 0;
      if (field == 40) m.unk_id = as_int32(v);
      if (field == 41) m.bos_id = as_int32(v);
      if (field == 42) m.eos_id = as_int32(v);
      if (field == 43) m.pad_id = as_int32(v);
    } else {
      r.skip(wire);
    }
  }
}

void read_normalizer_spec(std::string_view bytes, const std::string& source, SentencePieceModel& m) {
  Reader r(bytes, source, "the normalizer spec");
  while (!r.done()) {
    const auto [field, wire] = r.key();
    if (field == 1 || field == 2) {
      r.expect(wire, kLengthDelimited, field);
      (field == 1 ? m.normalizer_name : m.precompiled_charsmap) = std::string(r.bytes());
    } else if (field >= 3 && field <= 5) {
      r.expect(wire, kVarint, field);
      const bool on = r.varint() != 0;
      if (field == 3) m.add_dummy_prefix = on;
      if (field == 4) m.remove_extra_whitespaces = on;
      if (field == 5) m.escape_whitespaces = on;
    } else {
      r.skip(wire);
    }
  }
}

}  // namespace

SentencePieceModel parse_sentencepiece_model(std::string_view bytes, const std::string& source) {
  SentencePieceModel m;
  Reader r(bytes, source, "the model");
  while (!r.done()) {
    const auto [field, wire] = r.key();
    if (field >= 1 && field <= 3) {
      r.expect(wire, kLengthDelimited, field);
      const std::string_view sub = r.bytes();
      if (field == 1) m.pieces.push_back(read_piece(sub, source, m.pieces.size()));
      if (field == 2) read_trainer_spec(sub, source, m);
      if (field == 3) read_normalizer_spec(sub, source, m);
    } else {
      r.skip(wire);  // self_test_data, denormalizer_spec, extensions
    }
  }
  check(!m.pieces.empty(), source, ": a SentencePiece model without pieces");
  const auto id_ok = [&](int32_t id) { return id == -1 || (id >= 0 && static_cast<std::size_t>(id) < m.pieces.size()); };
  check(id_ok(m.unk_id) && id_ok(m.bos_id) && id_ok(m.eos_id) && id_ok(m.pad_id), source, ": special ids unk ",
        m.unk_id, ", bos ", m.bos_id, ", eos ", m.eos_id, ", pad ", m.pad_id, " must name pieces (0..",
        m.pieces.size() - 1, ") or be -1");
  return m;
}

}  // namespace il::text
