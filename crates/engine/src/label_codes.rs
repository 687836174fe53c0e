//! [`LabelCodes`]: dense codes for the text values of one column.
//!
//! Publishing handles the same few short labels millions of times: the class counter groups
//! rows by them, and the shuffle holds every written row until the last is read. Coding each
//! label as a small integer once makes both cheap: a label of at most 12 bytes is inline in
//! its 16-byte Utf8View view, so the view itself (its unused bytes cleared) is the key of a
//! small map, with a direct-mapped cache in front of it; longer labels are keyed by their
//! bytes. NULL has a code of its own. Codes are given in order of first appearance, from 0.

use datafusion::arrow::array::{Array, StringViewArray, StringViewBuilder};
use hashbrown::HashMap;

use crate::generalize::common::{INLINE_MAX, inline_bytes_key, inline_view_key};

/// Dense codes for the labels of one column.
#[derive(Debug, Default, Clone)]
pub(crate) struct LabelCodes {
    /// labels of at most 12 bytes, keyed by their canonical view (length + bytes, rest zero)
    inline: HashMap<u128, u32>,
    /// longer labels, keyed by their bytes
    long: HashMap<Box<[u8]>, u32>,
    null: Option<u32>,
    /// the label of each code (`None` for NULL)
    labels: Vec<Option<Box<[u8]>>>,
    /// the bytes of every label (for [`LabelCodes::memory_size`])
    label_bytes: usize,
    /// a direct-mapped cache in front of `inline`: one load per row on a hit
    cache: Vec<CacheEntry>,
}

/// One entry of [`LabelCodes::cache`]: an inline view, as read, and its label's code.
#[derive(Debug, Clone, Copy)]
struct CacheEntry {
    key: u128,
    code: u32,
}

/// An unused entry: its key's length (the low 32 bits) is no inline view's, so no lookup
/// matches it.
const UNUSED: CacheEntry = CacheEntry {
    key: u128::MAX,
    code: u32::MAX,
};

/// The cache has at most 2^12 slots (128 KiB), at least 2^6, and about 4 per code: a
/// column of a few labels keeps its cache in the processor's first-level cache (a table
/// and its shuffle encode up to a dozen columns at once, and a dozen 128 KiB caches did
/// not fit the second level).
const MAX_CACHE_BITS: u32 = 12;
const MIN_CACHE_BITS: u32 = 6;

#[inline]
fn cache_slot(key: u128, bits: u32) -> usize {
    let folded = (key as u64) ^ ((key >> 64) as u64);
    (folded.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
}

impl LabelCodes {
    fn next_code(&mut self, label: Option<&[u8]>) -> u32 {
        let code = self.labels.len() as u32;
        self.label_bytes += label.map_or(0, <[u8]>::len);
        self.labels.push(label.map(Box::from));
        code
    }

    /// The code of `label`, given one if new.
    pub(crate) fn intern(&mut self, label: Option<&[u8]>) -> u32 {
        if let Some(code) = self.get(label) {
            return code;
        }
        let code = self.next_code(label);
        match label {
            None => self.null = Some(code),
            Some(bytes) => match inline_bytes_key(bytes) {
                Some(key) => {
                    self.inline.insert(key, code);
                }
                None => {
                    self.long.insert(Box::from(bytes), code);
                }
            },
        }
        code
    }

    /// The code of `label`, if it has one.
    pub(crate) fn get(&self, label: Option<&[u8]>) -> Option<u32> {
        match label {
            None => self.null,
            Some(bytes) => match inline_bytes_key(bytes) {
                Some(key) => self.inline.get(&key).copied(),
                None => self.long.get(bytes).copied(),
            },
        }
    }

    /// The codes of `array`'s rows into `codes`, interning new labels.
    pub(crate) fn encode(&mut self, array: &StringViewArray, codes: &mut Vec<u32>) {
        codes.clear();
        codes.reserve(array.len());
        self.encode_each(array, |_, code| codes.push(code));
    }

    /// Each row's code, in order, to `code(row, code)`, interning new labels.
    #[inline]
    pub(crate) fn encode_each(
        &mut self,
        array: &StringViewArray,
        mut each: impl FnMut(usize, u32),
    ) {
        // resized (emptied) as the codes grow; entries are refilled from the map as rows ask
        let bits = (self.labels.len() * 4)
            .next_power_of_two()
            .trailing_zeros()
            .clamp(MIN_CACHE_BITS, MAX_CACHE_BITS);
        if self.cache.len() != 1 << bits {
            self.cache = vec![UNUSED; 1 << bits];
        }
        let views = array.views();
        let nulls = array.nulls().filter(|nulls| nulls.null_count() > 0);
        for (row, &view) in views.iter().enumerate() {
            if nulls.is_some_and(|nulls| nulls.is_null(row)) {
                each(row, self.intern(None));
                continue;
            }
            // the cache is keyed by the raw view: equal inline views are equal labels
            // (padding included), so a hit needs no canonical key
            let code = if (view as u32) as usize <= INLINE_MAX {
                let slot = cache_slot(view, bits);
                let entry = self.cache[slot];
                if entry.key == view {
                    entry.code
                } else {
                    let key = inline_view_key(view).unwrap_or(view);
                    let code = match self.inline.get(&key) {
                        Some(&code) => code,
                        None => {
                            let code = self.next_code(Some(array.value(row).as_bytes()));
                            self.inline.insert(key, code);
                            code
                        }
                    };
                    self.cache[slot] = CacheEntry { key: view, code };
                    code
                }
            } else {
                let bytes = array.value(row).as_bytes();
                match self.long.get(bytes) {
                    Some(&code) => code,
                    None => {
                        let code = self.next_code(Some(bytes));
                        self.long.insert(Box::from(bytes), code);
                        code
                    }
                }
            };
            each(row, code);
        }
    }
}

impl LabelCodes {
    /// The number of codes given.
    pub(crate) fn len(&self) -> usize {
        self.labels.len()
    }

    /// The label of `code` (`None` for NULL).
    pub(crate) fn label(&self, code: u32) -> Option<&[u8]> {
        self.labels[code as usize].as_deref()
    }

    /// Every code's label, code `c` at row `c`: decoding codes is a lookup into it.
    pub(crate) fn dictionary(&self) -> StringViewArray {
        let mut builder = StringViewBuilder::with_capacity(self.labels.len());
        for label in &self.labels {
            match label {
                // labels come from text arrays, or from the interned text of one
                Some(bytes) => builder.append_value(String::from_utf8_lossy(bytes)),
                None => builder.append_null(),
            }
        }
        builder.finish()
    }

    /// Bytes held, about (for the memory pool).
    pub(crate) fn memory_size(&self) -> usize {
        self.inline.capacity() * (size_of::<(u128, u32)>() + 1)
            + self.long.capacity() * (size_of::<(Box<[u8]>, u32)>() + 1)
            + self.label_bytes
            + self.labels.capacity() * size_of::<Option<Box<[u8]>>>()
            + self.cache.capacity() * size_of::<CacheEntry>()
    }
}
