// Memory for large activation buffers (CAT's and softmax's [N, D] floats, the CLI's inputs and
// outputs): transparent huge pages where the kernel offers them. A [N, D] buffer walked a row
// or a column group at a time touches a new 4 KiB page every row or two, so with small pages
// most accesses of a large pass also miss the TLB (3 ms of 177 for CAT at N = 16384, D = 512
// when only the caller's input and output were on small pages).
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace ternion {

// Asks the kernel to back the whole 2 MiB pages inside [p, p + bytes) with huge pages (Linux
// with transparent huge pages in "madvise" or "always" mode). A hint: no effect where
// unsupported, and the contents never change. Takes effect for pages not yet touched.
void prefer_huge_pages(void* p, std::size_t bytes);

// Allocator for vectors of large activations: 64-byte aligned; from 4 MiB up, 2 MiB aligned and
// marked for huge pages before the vector first writes to it.
template <class T>
struct HugePageAllocator {
    using value_type = T;
    static constexpr std::size_t kLarge = std::size_t{4} << 20;
    static constexpr std::size_t kHuge = std::size_t{2} << 20;
    HugePageAllocator() = default;
    template <class U>
    HugePageAllocator(const HugePageAllocator<U>&) {}
    T* allocate(std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        if (bytes < kLarge) return static_cast<T*>(::operator new (bytes, std::align_val_t{64}));
        void* p = ::operator new (bytes, std::align_val_t{kHuge});
        prefer_huge_pages(p, bytes);
        return static_cast<T*>(p);
    }
    void deallocate(T* p, std::size_t n) {
        ::operator delete (p, std::align_val_t{n * sizeof(T) < kLarge ? 64 : kHuge});
    }
    template <class U>
    bool operator==(const HugePageAllocator<U>&) const {
        return true;
    }
};

template <class T>
using LargeVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace ternion
