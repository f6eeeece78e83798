// NameTable: dense ids in first-seen order, stable across growth, exact
// string equality (prefixes, empty and embedded-NUL names are distinct).
#include "aggregate/name_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace profwatch::aggregate {
namespace {

TEST(NameTableTest, DenseIdsInFirstSeenOrderThroughGrowth) {
  NameTable t;
  bool added = false;
  // 5,000 names sharing a long prefix force many growths (64 slots at first).
  const std::string prefix(120, 'k');
  for (int i = 0; i < 5000; ++i) {
    EXPECT_EQ(t.Intern(prefix + std::to_string(i), added), static_cast<uint32_t>(i));
    EXPECT_TRUE(added);
  }
  ASSERT_EQ(t.size(), 5000u);
  for (int i = 4999; i >= 0; --i) {
    EXPECT_EQ(t.Intern(prefix + std::to_string(i), added), static_cast<uint32_t>(i));
    EXPECT_FALSE(added);
    EXPECT_EQ(t[static_cast<uint32_t>(i)], prefix + std::to_string(i));
  }
  EXPECT_EQ(t.size(), 5000u);
}

TEST(NameTableTest, PrefixesEmptyAndNulNamesAreDistinct) {
  NameTable t;
  bool added = false;
  const std::string with_nul("a\0b", 3);
  const uint32_t a = *t.Intern("a", added);
  const uint32_t ab = *t.Intern("ab", added);
  const uint32_t empty = *t.Intern("", added);
  EXPECT_TRUE(added);
  const uint32_t nul = *t.Intern(with_nul, added);
  EXPECT_TRUE(added);
  EXPECT_EQ(t.size(), 4u);
  EXPECT_EQ(t.Intern("", added), empty);
  EXPECT_FALSE(added);
  EXPECT_EQ(t.Intern(std::string_view("a\0b", 3), added), nul);
  EXPECT_EQ(t[nul], with_nul);
  EXPECT_EQ(t.Intern("a", added), a);
  EXPECT_EQ(t.Intern("ab", added), ab);
  EXPECT_NE(a, ab);
}

// The lookup cache keys on the length and the first and last 8 bytes: names
// that agree on all three share a cache slot and must still get their own
// ids, whichever was seen last; so must short names (fewer than 8 bytes).
TEST(NameTableTest, NamesThatShareTheCacheKeyStayDistinct) {
  NameTable t;
  bool added = false;
  std::vector<std::string> names;
  for (char middle = 'A'; middle <= 'Z'; ++middle) {
    names.push_back(std::string("fusion_a") + middle + "_kernel.kd");  // same length, head, tail
  }
  for (const char* s : {"x", "xy", "xyz", "xyzw1", "xyzw12", "xyzw123", "xyzw1234"})
    names.push_back(s);
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_EQ(t.Intern(names[i], added), static_cast<uint32_t>(i));
    EXPECT_TRUE(added);
  }
  // Alternating lookups: each evicts the other from the shared slot.
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < names.size(); ++i) {
      const size_t j = (i * 7 + static_cast<size_t>(round)) % names.size();
      EXPECT_EQ(t.Intern(names[j], added), static_cast<uint32_t>(j)) << names[j];
      EXPECT_FALSE(added);
      EXPECT_EQ(t.Intern(names[j], added), static_cast<uint32_t>(j)) << names[j];  // a cache hit
    }
  }
  EXPECT_EQ(t.size(), names.size());
}

}  // namespace
}  // namespace profwatch::aggregate
