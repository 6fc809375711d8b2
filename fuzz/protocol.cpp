// The protocol's request parser (include/auto_resume/protocol.hpp), as the daemon meets any local
// user's line, and the reply parser the plugin and healthctl use. Properties: never a crash; every
// bad line is a typed error whose reply can be sent; a parsed request survives its own encoding.
#include <cstdlib>

#include "auto_resume/protocol.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace proto = ar::proto;
  const auto line = ar::fuzz::as_text(data, size);

  auto request = proto::parse_request(line);
  if (request) {
    const auto json = proto::to_json(*request);
    auto encoded = proto::encode(json);
    encoded.pop_back();  // the newline
    auto again = proto::parse_request(encoded);
    if (!again || proto::to_json(*again) != json) std::abort();  // a request the daemon reads must survive re-encoding
  } else {
    if (request.error().code.empty()) std::abort();
    (void)proto::encode(proto::error_reply(request.error()));
  }

  (void)proto::parse_reply(line);
  return 0;
}
