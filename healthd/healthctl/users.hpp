// User names for uids, looked up on the node (healthctl runs where the jobs ran, so the node's
// passwd, LDAP or SSSD answers as Slurm's did).
#pragma once

#include <cstdint>
#include <string>

namespace ar::healthctl {

// The user's name, or "" when the uid has none (getpwuid_r). Each uid is looked up once.
std::string user_name_of(std::uint32_t uid);

// Who runs healthctl, for an admin's drain reason: the name of the real uid ($SUDO_USER when root
// runs it through sudo: the person, not "root"), the uid number when it has no name.
std::string invoking_user();

}  // namespace ar::healthctl
