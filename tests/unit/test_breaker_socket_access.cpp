// SPDX-License-Identifier: Apache-2.0
// breaker.socket_group / socket_mode: who may connect to the breaker socket, and the socket
// file really gets that mode and group.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "core/config/config.h"
#include "export/breaker_socket.h"

namespace tailcause {
namespace {

std::string error_of(const std::string& yaml) {
  try {
    core::parse_config(yaml, "t.yaml");
  } catch (const core::ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(BreakerSocketAccess, DefaultsAreOwnerOnly) {
  const core::Config c = core::parse_config("", "t.yaml");
  EXPECT_EQ(c.breaker.socket_mode, 0600u);
  EXPECT_EQ(c.breaker.socket_group, "");
}

TEST(BreakerSocketAccess, ParsesGroupAndMode) {
  const core::Config c = core::parse_config(
      "breaker:\n  socket_group: tailcause-agents\n  socket_mode: \"0660\"\n", "t.yaml");
  EXPECT_EQ(c.breaker.socket_group, "tailcause-agents");
  EXPECT_EQ(c.breaker.socket_mode, 0660u);
  EXPECT_EQ(core::parse_config("breaker:\n  socket_mode: 0620\n", "t.yaml").breaker.socket_mode,
            0620u);
  EXPECT_EQ(core::parse_config("breaker:\n  socket_group: '1234'\n", "t.yaml").breaker.socket_group,
            "1234");
}

TEST(BreakerSocketAccess, RejectsBadGroupsAndModesNamingTheKey) {
  struct Case {
    std::string yaml, key, words;
  };
  for (const Case& c : std::vector<Case>{
           {"socket_group: 'Bad Group'", "socket_group", "group name"},
           {"socket_group: 'a;rm'", "socket_group", "group name"},
           {"socket_group: [a]", "socket_group", "expected a string"},
           {"socket_mode: '0666'", "socket_mode", "others must get nothing"},
           {"socket_mode: '0640'", "socket_mode", "connecting needs write"},
           {"socket_mode: '0400'", "socket_mode", "owner needs read and write"},
           {"socket_mode: '0700'", "socket_mode", "owner needs read and write"},
           {"socket_mode: '4660'", "socket_mode", "octal mode"},
           {"socket_mode: '0689'", "socket_mode", "octal mode"},
           {"socket_mode: rw", "socket_mode", "octal mode"},
       }) {
    const std::string e = error_of("breaker:\n  " + c.yaml + "\n");
    EXPECT_NE(e.find("t.yaml:2: breaker." + c.key), std::string::npos) << c.yaml << ": " << e;
    EXPECT_NE(e.find(c.words), std::string::npos) << c.yaml << ": " << e;
  }
}

TEST(BreakerSocketAccess, TheSocketFileGetsTheModeAndGroup) {
  const std::string dir = ::testing::TempDir() + "/breaker_access";
  std::filesystem::remove_all(dir);
  ::mkdir(dir.c_str(), 0755);
  const std::string path = dir + "/b.sock";
  // A group the process belongs to: its own primary one (works without privileges).
  const gid_t gid = ::getegid();
  exporter::BreakerSocket socket(path, [](const core::BreakerRequest&) { return std::string(); });
  socket.set_access(0660, gid);
  socket.start();
  struct stat st {};
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0660u);
  EXPECT_EQ(st.st_gid, gid);
  socket.stop();

  exporter::BreakerSocket owner_only(path,
                                     [](const core::BreakerRequest&) { return std::string(); });
  owner_only.start();
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  owner_only.stop();
}

}  // namespace
}  // namespace tailcause
