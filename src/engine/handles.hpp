// Handles: 64-bit values of (object type, generation, slot). A stale handle (object freed, slot
// reused) has the wrong generation and is rejected instead of touching the new object.
#pragma once

#include <atomic>
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
template <class T> class HandleTable {
public:
    ptl_handle_any_t insert(ObjType type, T *obj) {
        uint32_t slot;
        if (!free_.empty()) {
            slot = free_.back();
            free_.pop_back();
        } else {
            slot = static_cast<uint32_t>(slots_.size());
            slots_.push_back({});
        }
        slots_[slot].obj = obj;
        return make_handle(type, slots_[slot].gen, slot);
    }
    T *lookup(ObjType type, ptl_handle_any_t h) const {
        if (handle_type(h) != type) return nullptr;
        uint32_t slot = handle_slot(h);
        if (slot >= slots_.size()) return nullptr;
        const Slot &s = slots_[slot];
        return s.gen == handle_gen(h) ? s.obj : nullptr;
    }
    void remove(ptl_handle_any_t h) {
        uint32_t slot = handle_slot(h);
        if (slot >= slots_.size() || slots_[slot].gen != handle_gen(h)) return;
        Slot &s = slots_[slot];
        s.obj = nullptr;
        s.gen = (s.gen + 1) & 0xFFFFFF;
        if (s.gen == 0) s.gen = 1;
        free_.push_back(slot);
    }
    template <class F> void for_each(F f) const {
        for (const Slot &s : slots_)
            if (s.obj) f(s.obj);
    }

private:
    struct Slot {
        uint32_t gen = 1;
        T *obj = nullptr;
    };
    std::vector<Slot> slots_;
    std::vector<uint32_t> free_;
};

// A HandleTable whose lookups may also run without the engine lock (lookup_unlocked), for the
// objects that waiting and polling threads name on every call (EQs and CTs): slots live in chunks
// that never move, and slot fields are atomics. Changes still happen under the engine lock. An
// object found without the lock may be freed the next moment, so such objects must never be
// returned to the allocator while the engine lives (they are recycled, see Engine::pin).
template <class T> class SharedHandleTable {
public:
    SharedHandleTable() = default;
    SharedHandleTable(const SharedHandleTable &) = delete;
    SharedHandleTable &operator=(const SharedHandleTable &) = delete;
    ~SharedHandleTable() {
        for (auto &c : chunks_) delete[] c.load(std::memory_order_relaxed);
    }

    // Engine lock held. 0 when every slot is taken.
    ptl_handle_any_t insert(ObjType type, T *obj) {
        uint32_t slot;
        if (!free_.empty()) {
            slot = free_.back();
            free_.pop_back();
        } else {
            if (size_ == kChunks * kChunkSlots) return 0;
            slot = size_++;
            auto &chunk = chunks_[slot / kChunkSlots];
            if (!chunk.load(std::memory_order_relaxed)) chunk.store(new Slot[kChunkSlots], std::memory_order_release);
        }
        Slot &s = at(slot);
        s.obj.store(obj, std::memory_order_release);
        return make_handle(type, s.gen.load(std::memory_order_relaxed), slot);
    }
    // Engine lock held, or not (then the answer may be stale the next moment).
    T *lookup(ObjType type, ptl_handle_any_t h) const {
        if (handle_type(h) != type) return nullptr;
        const uint32_t slot = handle_slot(h);
        if (slot >= kChunks * kChunkSlots) return nullptr;
        const Slot *chunk = chunks_[slot / kChunkSlots].load(std::memory_order_acquire);
        if (!chunk) return nullptr;
        const Slot &s = chunk[slot % kChunkSlots];
        T *obj = s.obj.load(std::memory_order_seq_cst);
        return s.gen.load(std::memory_order_seq_cst) == handle_gen(h) ? obj : nullptr;
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

private:
    static constexpr uint32_t kChunkSlots = 1024;
    static constexpr uint32_t kChunks = 4096; // 4 Mi objects of one kind at once
    struct Slot {
        std::atomic<uint32_t> gen{1};
        std::atomic<T *> obj{nullptr};
    };
    Slot &at(uint32_t slot) const {
        return chunks_[slot / kChunkSlots].load(std::memory_order_relaxed)[slot % kChunkSlots];
    }

    std::atomic<Slot *> chunks_[kChunks] = {};
    uint32_t size_ = 0;
    std::vector<uint32_t> free_;
};

} // namespace portico::engine
