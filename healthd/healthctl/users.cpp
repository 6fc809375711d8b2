#include "users.hpp"

#include <cerrno>
#include <cstdlib>
#include <map>
#include <vector>

#include <pwd.h>
#include <unistd.h>

#include "text.hpp"

namespace ar::healthctl {

std::string user_name_of(std::uint32_t uid) {
  static std::map<std::uint32_t, std::string> cache;
  if (auto it = cache.find(uid); it != cache.end()) return it->second;
  std::vector<char> buffer(16384);
  passwd pw{};
  passwd* found = nullptr;
  int rc = 0;
  // ERANGE: an entry larger than the buffer (a long GECOS from LDAP); grow it, up to 1 MiB.
  while ((rc = ::getpwuid_r(static_cast<uid_t>(uid), &pw, buffer.data(), buffer.size(), &found)) == ERANGE &&
         buffer.size() < (1u << 20))
    buffer.resize(buffer.size() * 2);
  std::string name = (rc == 0 && found != nullptr && found->pw_name != nullptr) ? printable(found->pw_name) : "";
  cache.emplace(uid, name);
  return name;
}

std::string invoking_user() {
  const auto uid = static_cast<std::uint32_t>(::getuid());
  auto name = user_name_of(uid);
  if (name.empty()) name = std::to_string(uid);
  if (uid == 0) {
    // sudo's word for who asked: only a label in a drain reason, never used to decide anything.
    if (const char* sudo = std::getenv("SUDO_USER"); sudo != nullptr && *sudo != '\0')
      return fit(printable(sudo), 32, "...");
  }
  return name;
}

}  // namespace ar::healthctl
