// SPDX-License-Identifier: BSD-3-Clause
// Handles: 64-bit values of (object type, generation, slot). A stale handle (object freed, slot
// reused) has the wrong generation and is rejected instead of touching the new object.
#pragma once

#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

#include <portals4.h>

namespace portico::engine {

enum class ObjType : uint8_t { NI = 1, MD = 2, LE = 3, ME = 4, EQ = 5, CT = 6 };

inline ObjType handle_type(ptl_handle_any_t h) { return static_cast<ObjType>(h >> 56); }
inline uint32_t handle_slot(ptl_handle_any_t h) { return static_cast<uint32_t>(h); }
inline uint32_t handle_gen(ptl_handle_any_t h) { return static_cast<uint32_t>(h >> 32) & 0xFFFFFF; }
inline ptl_handle_any_t make_handle(ObjType t, uint32_t gen, uint32_t slot) {
    return (uint64_t(t) << 56) | (uint64_t(gen & 0xFFFFFF) << 32) | slot;
}

// Generation 0 never names a live object: PTL_EQ_NONE and PTL_CT_NONE use it.
//
// Changes happen under the engine lock; lookups may also run without it (the EQs and CTs that
// waiting and polling threads name on every call, see Engine::pin): slots live in chunks that
// never move (chunk k holds 1024 * 2^k slots, so they grow like a vector without copying) and
// slot fields are atomics. An object found without the lock may be freed the next moment, so
// objects looked up that way must never be returned to the allocator while the engine lives.
template <class T> class HandleTable {
public:
    HandleTable() = default;
    HandleTable(const HandleTable &) = delete;
    HandleTable &operator=(const HandleTable &) = delete;
    ~HandleTable() {
        for (auto &c : chunks_) delete[] c.load(std::memory_order_relaxed);
    }

    // Engine lock held. 0 when every slot is taken.
    ptl_handle_any_t insert(ObjType type, T *obj) {
        uint32_t slot;
        if (!free_.empty()) {
            slot = free_.back();
            free_.pop_back();
        } else {
            if (size_ == UINT32_MAX) return 0;
            slot = size_++;
            auto &chunk = chunks_[chunk_of(slot)];
            if (!chunk.load(std::memory_order_relaxed))
                chunk.store(new Slot[chunk_size(chunk_of(slot))], std::memory_order_release);
        }
        Slot &s = at(slot);
        s.obj.store(obj, std::memory_order_release);
        return make_handle(type, s.gen.load(std::memory_order_relaxed), slot);
    }
    struct Slot;
    // Engine lock held, or not (then the answer may be stale the next moment).
    T *lookup(ObjType type, ptl_handle_any_t h) const {
        const Slot *s = slot_of(type, h);
        return s ? s->object(h) : nullptr;
    }
    // The slot h names (nullptr: none): a caller that looks twice (Engine::pin) finds it once.
    const Slot *slot_of(ObjType type, ptl_handle_any_t h) const {
        return handle_type(h) == type ? slot_at(handle_slot(h)) : nullptr;
    }
    // Engine lock held.
    void remove(ptl_handle_any_t h) {
        const uint32_t slot = handle_slot(h);
        if (slot >= size_ || at(slot).gen.load(std::memory_order_relaxed) != handle_gen(h)) return;
        Slot &s = at(slot);
        uint32_t gen = (s.gen.load(std::memory_order_relaxed) + 1) & 0xFFFFFF;
        if (gen == 0) gen = 1;
        // The generation first: a reader that still finds the object sees the old generation or
        // none (its check after pinning, Engine::pin, pairs with the freer's look at users).
        s.gen.store(gen, std::memory_order_seq_cst);
        s.obj.store(nullptr, std::memory_order_seq_cst);
        free_.push_back(slot);
    }
    // Engine lock held.
    template <class F> void for_each(F f) const {
        for (uint32_t i = 0; i < size_; ++i)
            if (T *o = at(i).obj.load(std::memory_order_relaxed)) f(o);
    }

    struct Slot {
        std::atomic<uint32_t> gen{1};
        std::atomic<T *> obj{nullptr};
        // The object, if the slot still holds the one h was made for.
        T *object(ptl_handle_any_t h) const {
            T *o = obj.load(std::memory_order_seq_cst);
            return gen.load(std::memory_order_seq_cst) == handle_gen(h) ? o : nullptr;
        }
    };

private:
    static constexpr unsigned kFirstBits = 10; // chunk 0: 1024 slots
    static constexpr uint32_t kFirstSlots = uint32_t{1} << kFirstBits;
    static constexpr unsigned kChunks = 23; // 1024 * (2^23 - 1) slots > 2^32
    static unsigned chunk_of(uint32_t slot) {
        return static_cast<unsigned>(std::bit_width((uint64_t{slot} >> kFirstBits) + 1)) - 1;
    }
    static uint64_t chunk_base(unsigned k) { return ((uint64_t{1} << k) - 1) << kFirstBits; }
    static uint64_t chunk_size(unsigned k) { return uint64_t{1} << (k + kFirstBits); }
    // The slot, or nullptr when its chunk was never made.
    Slot *slot_at(uint32_t slot) const {
        // Nearly every object lives in the first chunk: no chunk arithmetic for it.
        if (slot < kFirstSlots) {
            Slot *first = chunks_[0].load(std::memory_order_acquire);
            return first ? first + slot : nullptr;
        }
        const unsigned k = chunk_of(slot);
        Slot *chunk = chunks_[k].load(std::memory_order_acquire);
        return chunk ? chunk + (slot - chunk_base(k)) : nullptr;
    }
    Slot &at(uint32_t slot) const { return *slot_at(slot); } // a slot below size_

    std::atomic<Slot *> chunks_[kChunks] = {};
    uint32_t size_ = 0;
    std::vector<uint32_t> free_;
};

} // namespace portico::engine
