// The streaming loop of embed and rerank: read records, turn each into a model input (a bad one
// throws an input error naming its line), and hand over chunks bounded by a token budget and a
// line count, so memory stays flat however long the input is.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_common.h"
#include "cli/progress.h"
#include "cli/text_inputs.h"
#include "inferencelayer/types.h"

namespace il::cli {

inline constexpr std::size_t kChunkLines = 256;

// to_input(const InputRecord&) -> TokenInput; process(const std::vector<TokenInput>&, const
// std::vector<std::string>& where) runs and writes one chunk; where[i] names input i in messages
// ("input line 3").
template <typename ToInput, typename Process>
void run_in_chunks(RecordSource& src, std::size_t max_tokens, Progress& progress, ToInput&& to_input,
                   Process&& process) {
  std::vector<TokenInput> chunk;
  std::vector<std::string> where;
  std::size_t chunk_tokens = 0;
  InputRecord rec;
  bool more = true;
  while (more) {
    try {
      more = src.next(rec);
      if (more) {
        TokenInput in = to_input(rec);
        chunk_tokens += in.ids.size();
        chunk.push_back(std::move(in));
        where.push_back(rec.where);
      }
    } catch (const UsageError&) {
      // Everything before the bad line is written, so the output is an exact prefix of the result.
      if (!chunk.empty()) process(chunk, where);
      throw;
    }
    if (!chunk.empty() && (!more || chunk.size() >= kChunkLines || chunk_tokens >= max_tokens)) {
      process(chunk, where);
      chunk.clear();
      where.clear();
      chunk_tokens = 0;
      progress.update(src.records_read(), src.bytes_read());
    }
  }
  progress.finish();
}

}  // namespace il::cli
