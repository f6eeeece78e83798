// NameTable: dense ids in first-seen order, stable across growth, exact
// string equality (prefixes, empty and embedded-NUL names are distinct).
#include "aggregate/name_table.h"

#include <gtest/gtest.h>

#include <string>

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
  const uint32_t a = t.Intern("a", added);
  const uint32_t ab = t.Intern("ab", added);
  const uint32_t empty = t.Intern("", added);
  EXPECT_TRUE(added);
  const uint32_t nul = t.Intern(with_nul, added);
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

}  // namespace
}  // namespace profwatch::aggregate
