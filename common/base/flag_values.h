// Numeric flag values, parsed the same way by every command: each refusal is one line naming the
// flag and why.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base/result.h"

namespace carapace {

// A refused flag or value: an invalid-input error (the commands answer it with exit status 2).
Error flag_error(const std::string& msg);

// Plain decimal, no sign, no trailing junk, no overflow.
Result<uint64_t> parse_u64(const std::string& flag, const std::string& text);
// A positive, finite number of seconds, at most 10^7.
Result<double> parse_seconds(const std::string& flag, const std::string& text);
// The digits alone (std::from_chars: no sign, no space, no junk, no overflow); nullopt for
// anything else. For commands that word their own range errors.
std::optional<uint64_t> decimal_u64(std::string_view text);

// One of a fixed set of words, e.g. `--netns new|none`.
template <typename T>
struct FlagChoice {
  const char* word;
  T value;
};
// "FLAG: expected a, b or c, got 'TEXT'".
Error choice_error(const std::string& flag, const std::vector<const char*>& words,
                   const std::string& text);
template <typename T>
Result<T> parse_choice(const std::string& flag, const std::string& text,
                       std::initializer_list<FlagChoice<T>> choices) {
  std::vector<const char*> words;
  for (const FlagChoice<T>& c : choices) {
    if (text == c.word) return c.value;
    words.push_back(c.word);
  }
  return choice_error(flag, words, text);
}

// Walks `args` as `--flag value` pairs, --help and -h standing alone (they set `help`), and calls
// `on_flag` for each pair; stops at its first error, or at a flag with no value after it.
Status for_each_flag_pair(
    const std::vector<std::string>& args, bool& help,
    const std::function<Status(const std::string& flag, const std::string& value)>& on_flag);

}  // namespace carapace
