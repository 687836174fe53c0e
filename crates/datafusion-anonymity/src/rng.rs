//! [`SplitMix64`]: the one pseudo-random generator of the workspace (the data generator, the
//! seeded range queries of the utility report, the tests). Tiny, portable and deterministic,
//! so a seed means the same output on every machine.

/// splitmix64 (Steele, Lea and Flood 2014).
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// In 0..bound (bound > 0; modulo draw, bias negligible for small bounds).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }
}
