// Index lists (active inputs, spikes) that grow to their room and shrink to their count every
// step: an allocator that leaves new elements uninitialised, so resizing to the room costs no
// memset.
#pragma once
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace ternion {

template <class T>
struct NoInitAllocator : std::allocator<T> {
    template <class U>
    struct rebind {
        using other = NoInitAllocator<U>;
    };
    NoInitAllocator() = default;
    template <class U>
    NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
    template <class U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... A>
    void construct(U* p, A&&... a) {
        ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
    }
};

using IndexList = std::vector<std::uint32_t, NoInitAllocator<std::uint32_t>>;

}  // namespace ternion
