// ByteBuffer: a std::vector<char> whose resize() leaves new bytes
// uninitialised. Read buffers are always written before they are read, and
// value-initialising them cost a memset plus a page fault for every page,
// even the pages of a buffer's spare room that are never touched (the
// parser sizes its buffers for two chunks and usually fills one).
#pragma once

#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace profwatch {

template <typename T>
class DefaultInitAllocator : public std::allocator<T> {
 public:
  template <typename U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() noexcept = default;
  template <typename U>
  DefaultInitAllocator(const DefaultInitAllocator<U>& other) noexcept : std::allocator<T>(other) {}

  // resize(n) default-initialises: nothing is written for char.
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

using ByteBuffer = std::vector<char, DefaultInitAllocator<char>>;

}  // namespace profwatch
