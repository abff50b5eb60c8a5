// Handles: 64-bit values of (object type, generation, slot). A stale handle (object freed, slot
// reused) has the wrong generation and is rejected instead of touching the new object.
#pragma once

#include <cstdint>
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

} // namespace portico::engine
