// Small SentencePiece-style tokenizer.json documents for the Unigram / Precompiled / Metaspace
// unit tests, and a Darts-clone double-array writer for hand-made precompiled charsmaps.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "text/tokenizer.h"

namespace il::text::spm_testing {

using nlohmann::json;

// A document with only a Unigram model over `pieces` ([piece, score]); the rest is added per test.
inline json unigram_doc(const std::vector<std::pair<std::string, double>>& pieces,
                        json unk_id = 0, bool byte_fallback = false) {
  json vocab = json::array();
  for (const auto& [p, s] : pieces) vocab.push_back({p, s});
  return {{"version", "1.0"},
          {"model",
           {{"type", "Unigram"}, {"unk_id", unk_id}, {"vocab", vocab},
            {"byte_fallback", byte_fallback}}}};
}

inline Tokenizer load(const json& j) {
  return Tokenizer::from_json_string(j.dump(), "tokenizer.json");
}

inline std::string load_error(const json& j) {
  try {
    load(j);
  } catch (const il::Error& e) {
    return e.what();
  }
  return "(no error)";
}

using Offsets = std::vector<std::pair<uint32_t, uint32_t>>;

// The tokens (as strings) of an encoding, to make expectations readable.
inline std::vector<std::string> tokens_of(const Tokenizer& t, const Encoding& e) {
  std::vector<std::string> out;
  for (const int32_t id : e.ids) out.push_back(t.id_to_token(id).value_or("?"));
  return out;
}

// A precompiled_charsmap blob mapping each key to its replacement, laid out the way
// SentencePiece's Darts-clone writes it: every trie node that has children or ends a key gets a
// 256-unit block of its own; a node's unit holds its label, a has-leaf bit and the XOR offset
// to its block, where the unit at label 0 holds the key's replacement offset.
inline std::string charsmap(const std::map<std::string, std::string>& rules) {
  struct Node {
    std::map<unsigned char, int> children;
    int value = -1;  // offset of the replacement, -1: no key ends here
  };
  std::vector<Node> nodes(1);
  std::string strings;
  for (const auto& [key, replacement] : rules) {
    int n = 0;
    for (const char c : key) {
      const auto b = static_cast<unsigned char>(c);
      auto it = nodes[n].children.find(b);
      if (it == nodes[n].children.end()) {
        nodes.push_back({});
        it = nodes[n].children.emplace(b, static_cast<int>(nodes.size()) - 1).first;
      }
      n = it->second;
    }
    nodes[n].value = static_cast<int>(strings.size());
    strings += replacement;
    strings += '\0';
  }
  std::vector<uint32_t> units(256, 0);
  // place(node, position): the node's block goes at the end of the array.
  auto place = [&](auto&& self, int node, std::size_t position, unsigned char label,
                   bool is_root) -> void {
    const std::size_t block = units.size();
    units.resize(block + 256, 0);
    const auto offset = static_cast<uint32_t>(position ^ block);
    const uint32_t leaf = nodes[node].value >= 0 ? (1u << 8) : 0;
    units[position] = (offset << 10) | leaf | (is_root ? 0u : label);
    if (nodes[node].value >= 0) {
      units[block] = (1u << 31) | static_cast<uint32_t>(nodes[node].value);
    }
    for (const auto& [b, child] : nodes[node].children) self(self, child, block ^ b, b, false);
  };
  place(place, 0, 0, 0, true);
  std::string blob;
  auto le32 = [&](uint32_t v) {
    for (int k = 0; k < 4; ++k) blob.push_back(static_cast<char>((v >> (8 * k)) & 0xFF));
  };
  le32(static_cast<uint32_t>(units.size() * 4));
  for (const uint32_t u : units) le32(u);
  return blob + strings;
}

inline std::string base64(const std::string& bytes) {
  static const char* alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                       static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8 |
                       static_cast<unsigned char>(bytes[i + 2]);
    for (int k = 3; k >= 0; --k) out += alphabet[(v >> (6 * k)) & 63];
  }
  if (i + 1 == bytes.size()) {
    const uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == bytes.size()) {
    const uint32_t v = static_cast<uint32_t>(static_cast<unsigned char>(bytes[i])) << 16 |
                       static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + 1])) << 8;
    out += alphabet[(v >> 18) & 63];
    out += alphabet[(v >> 12) & 63];
    out += alphabet[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

}  // namespace il::text::spm_testing
