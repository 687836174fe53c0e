//! [`DirectTable`]: an open-addressing map from a 64-bit key to a class, for lookups at
//! millions of keys, one per row. Each entry is one word, `key << class_bits | class`, found
//! by linear probing in a table at most half full: a lookup usually reads one slot, where a
//! general hash map reads its control bytes and then its bucket (two dependent cache misses
//! per row once the map outgrows the caches). Callers [`prefetch`] the slots of rows a few
//! ahead, so that the misses of consecutive rows overlap.

/// Key → class in one word per entry; see the module documentation.
#[derive(Debug, Clone)]
pub struct DirectTable {
    slots: Vec<u64>,
    /// entries inserted
    len: usize,
    mask: usize,
    /// 64 − log2(slots): the hash's top bits pick the slot
    shift: u32,
    class_bits: u32,
}

/// No entry: a key and class both all ones, which [`DirectTable::new`] rules out.
pub const EMPTY: u64 = u64::MAX;

/// Rows whose slots are fetched ahead of their lookup.
pub const PREFETCH_DISTANCE: usize = 16;

impl DirectTable {
    /// A table for `entries` keys below 2^`key_bits` and classes up to `max_class`; `None` if
    /// a key and a class do not fit 64 bits together.
    pub fn new(entries: usize, key_bits: u32, max_class: u32) -> Option<Self> {
        // one value more than the largest class, so no entry is all ones
        let class_bits = u64::BITS - (max_class as u64 + 1).leading_zeros();
        if key_bits.saturating_add(class_bits) > 64 {
            return None;
        }
        let slots = (entries.max(1) * 2).next_power_of_two();
        Some(Self {
            slots: vec![EMPTY; slots],
            len: 0,
            mask: slots - 1,
            shift: 64 - slots.trailing_zeros(),
            class_bits,
        })
    }

    #[inline]
    fn slot(&self, key: u64) -> usize {
        // Fibonacci hashing: the multiplication spreads the low bits into the top ones
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize & self.mask
    }

    /// Maps `key` to `class` (which must be at most the table's `max_class`, and the table
    /// must have room: [`DirectTable::has_room_for`]).
    pub fn insert(&mut self, key: u64, class: u32) {
        let mut i = self.slot(key);
        while self.slots[i] != EMPTY && self.slots[i] >> self.class_bits != key {
            i = (i + 1) & self.mask;
        }
        if self.slots[i] == EMPTY {
            self.len += 1;
        }
        self.slots[i] = key << self.class_bits | class as u64;
    }

    /// Whether one more entry, of class `class`, keeps the table at most half full and fits
    /// its class bits.
    pub fn has_room_for(&self, class: u32) -> bool {
        (self.len + 1) * 2 <= self.slots.len() && (class as u64) < (1 << self.class_bits) - 1
    }

    /// Bytes held.
    pub fn memory_size(&self) -> usize {
        self.slots.capacity() * size_of::<u64>()
    }

    #[inline]
    pub fn get(&self, key: u64) -> Option<u32> {
        let mut i = self.slot(key);
        loop {
            let entry = self.slots[i];
            if entry == EMPTY {
                return None;
            }
            if entry >> self.class_bits == key {
                return Some((entry & ((1 << self.class_bits) - 1)) as u32);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Asks the CPU to load `key`'s slot.
    #[inline]
    pub fn prefetch(&self, key: u64) {
        prefetch(&self.slots[self.slot(key)]);
    }
}

/// Asks the CPU to load `value`'s cache line: a hint, with no effect on results.
#[inline]
pub fn prefetch<T>(value: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        let at: *const T = value;
        // SAFETY: a prefetch reads nothing into the program; `at` is a valid address
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast::<i8>())
        };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = value;
}

#[cfg(test)]
mod tests {
    use hashbrown::HashMap;

    use super::*;

    /// The table against a hash map: every key inserted is found with its class, every other
    /// key is absent; keys and classes at the widths' limits, with collisions forced by a
    /// small table.
    #[test]
    fn direct_table_matches_a_hash_map() {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for (entries, key_bits, max_class) in
            [(1usize, 0u32, 0u32), (1000, 20, 999), (5000, 40, 65_534)]
        {
            let class_bits = u64::BITS - (max_class as u64 + 1).leading_zeros();
            let mut table = DirectTable::new(entries, key_bits, max_class).unwrap();
            let mut reference: HashMap<u64, u32> = HashMap::new();
            let key_mask = if key_bits == 0 {
                0
            } else {
                (1u64 << key_bits) - 1
            };
            // the largest key and class: an entry one bit short of EMPTY
            table.insert(key_mask, max_class);
            reference.insert(key_mask, max_class);
            while reference.len() < entries {
                let key = next() & key_mask;
                let class = (next() % (max_class as u64 + 1)) as u32;
                if let hashbrown::hash_map::Entry::Vacant(e) = reference.entry(key) {
                    e.insert(class);
                    table.insert(key, class);
                }
            }
            for (&key, &class) in &reference {
                assert_eq!(table.get(key), Some(class), "key {key}");
            }
            for _ in 0..10_000 {
                let key = next() & key_mask;
                assert_eq!(table.get(key), reference.get(&key).copied(), "key {key}");
            }
            assert!(key_bits + class_bits <= 64);
        }
        // a key and a class that do not fit 64 bits together
        assert!(DirectTable::new(10, 50, 1 << 20).is_none());
        assert!(DirectTable::new(10, u32::MAX, 1).is_none());
    }
}
