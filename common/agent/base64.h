// Base64 (RFC 4648, standard alphabet, padded): how byte payloads travel inside JSON frames.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace carapace::agent {

std::string base64_encode(std::string_view bytes);
// Strict: the length is a multiple of 4, only alphabet characters, '=' only as 1-2 final
// characters, no whitespace. Anything else is nullopt.
std::optional<std::string> base64_decode(std::string_view text);
// Bytes that `text` would decode to, or nullopt when its length is not a multiple of 4; lets a
// receiver check a size cap before decoding.
std::optional<size_t> base64_decoded_size(std::string_view text);

}  // namespace carapace::agent
