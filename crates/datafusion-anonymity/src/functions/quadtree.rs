//! The quadtree over WGS84 latitude/longitude behind `quadkey` and `quadkey_bounds` and the
//! engine's location cloaking: one rule, one place.
//!
//! Level 0 is the whole globe, longitude [-180, 180] by latitude [-90, 90]; each level halves
//! both sides of every cell (an equirectangular, "plate carrée" grid, so that every cell is a
//! box in degrees and the poles are covered — unlike Bing's Web Mercator tiles, which stop at
//! ±85.05°). At level `L` the column of a point is `x = floor((lon + 180) / 360 · 2^L)` and its
//! row, counted from the north as Bing's tiles are, `y = floor((90 − lat) / 180 · 2^L)`, each
//! clamped to `2^L − 1` (so longitude 180 and latitude −90 fall in the last cell). A cell thus
//! holds the longitudes `[min_lon, max_lon)` and the latitudes `(min_lat, max_lat]`, the last
//! column and row their far edge too.
//!
//! The quadkey names a cell as Bing's tile system does: one digit per level, from level 1 down,
//! `digit = x_bit + 2 · y_bit` (0 north-west, 1 north-east, 2 south-west, 3 south-east). So a
//! cell's key is a prefix of the keys of every cell inside it, and level 0 is the empty key.
//!
//! `MAX_LEVEL` is 30: a level-30 cell is 0.17 mm of latitude, and a code of 2 bits per level
//! fits a `u64`.

/// The finest level.
pub const MAX_LEVEL: u8 = 30;

/// The mean Earth radius (IUGG), metres: cell areas and sides are measured on this sphere.
pub const EARTH_RADIUS_M: f64 = 6_371_008.8;

/// Why a position has no cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PositionError {
    /// Latitude outside [-90, 90] (or NaN).
    Latitude,
    /// Longitude outside [-180, 180] (or NaN).
    Longitude,
}

impl PositionError {
    /// The rule the position broke (never the value).
    pub fn describe(self) -> &'static str {
        match self {
            PositionError::Latitude => "a latitude outside [-90, 90]",
            PositionError::Longitude => "a longitude outside [-180, 180]",
        }
    }
}

/// The column and row of `(lat, lon)` at `MAX_LEVEL`, from which every coarser level's are
/// a shift: `floor(a · 2^L) = floor(a · 2^30) >> (30 − L)` exactly, since multiplying by a
/// power of two is exact in floating point.
pub fn finest_cell(lat: f64, lon: f64) -> Result<(u32, u32), PositionError> {
    // `contains` is false for NaN
    if !(-90.0..=90.0).contains(&lat) {
        return Err(PositionError::Latitude);
    }
    if !(-180.0..=180.0).contains(&lon) {
        return Err(PositionError::Longitude);
    }
    let side = (1u64 << MAX_LEVEL) as f64;
    let last = (1u32 << MAX_LEVEL) - 1;
    let x = (((lon + 180.0) / 360.0) * side).floor() as u32;
    let y = (((90.0 - lat) / 180.0) * side).floor() as u32;
    Ok((x.min(last), y.min(last)))
}

/// The Morton (Z-order) code of a finest cell: bit pairs `y_bit x_bit` from level 1 down, so
/// the code's first `2·L` bits are the level-`L` quadkey's digits.
pub fn morton(x: u32, y: u32) -> u64 {
    spread(x) | (spread(y) << 1)
}

/// The bits of `v` at the even positions of a `u64`.
fn spread(v: u32) -> u64 {
    let mut v = v as u64;
    v = (v | (v << 16)) & 0x0000_FFFF_0000_FFFF;
    v = (v | (v << 8)) & 0x00FF_00FF_00FF_00FF;
    v = (v | (v << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    v = (v | (v << 2)) & 0x3333_3333_3333_3333;
    v = (v | (v << 1)) & 0x5555_5555_5555_5555;
    v
}

/// The inverse of [`spread`].
fn compact(v: u64) -> u32 {
    let mut v = v & 0x5555_5555_5555_5555;
    v = (v | (v >> 1)) & 0x3333_3333_3333_3333;
    v = (v | (v >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    v = (v | (v >> 4)) & 0x00FF_00FF_00FF_00FF;
    v = (v | (v >> 8)) & 0x0000_FFFF_0000_FFFF;
    v = (v | (v >> 16)) & 0x0000_0000_FFFF_FFFF;
    v as u32
}

/// A cell: its level and its column and row at that level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Cell {
    pub level: u8,
    pub x: u32,
    pub y: u32,
}

/// A cell's box in degrees.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bounds {
    pub min_lat: f64,
    pub min_lon: f64,
    pub max_lat: f64,
    pub max_lon: f64,
}

impl Cell {
    /// The level-`level` cell of a finest cell's Morton `code`.
    pub fn of_code(code: u64, level: u8) -> Self {
        let prefix = code >> (2 * (MAX_LEVEL - level) as u32);
        Self {
            level,
            x: compact(prefix),
            y: compact(prefix >> 1),
        }
    }

    /// The cell of `(lat, lon)` at `level` (at most [`MAX_LEVEL`]).
    pub fn of_position(lat: f64, lon: f64, level: u8) -> Result<Self, PositionError> {
        let (x, y) = finest_cell(lat, lon)?;
        let shift = (MAX_LEVEL - level) as u32;
        Ok(Self {
            level,
            x: x >> shift,
            y: y >> shift,
        })
    }

    /// The box of the cell, in degrees.
    pub fn bounds(&self) -> Bounds {
        let n = (1u64 << self.level) as f64;
        let (x, y) = (self.x as f64, self.y as f64);
        Bounds {
            min_lon: -180.0 + 360.0 * x / n,
            max_lon: -180.0 + 360.0 * (x + 1.0) / n,
            max_lat: 90.0 - 180.0 * y / n,
            min_lat: 90.0 - 180.0 * (y + 1.0) / n,
        }
    }

    /// The quadkey's digits, appended to `out` (level 0 appends nothing).
    pub fn write_quadkey(&self, out: &mut String) {
        for i in (0..self.level as u32).rev() {
            let digit = ((self.x >> i) & 1) + 2 * ((self.y >> i) & 1);
            out.push(char::from(b'0' + digit as u8));
        }
    }

    /// The cell a quadkey names: `None` unless it is at most [`MAX_LEVEL`] digits 0 to 3.
    pub fn from_quadkey(key: &str) -> Option<Self> {
        if key.len() > MAX_LEVEL as usize {
            return None;
        }
        let (mut x, mut y) = (0u32, 0u32);
        for byte in key.bytes() {
            let digit = byte.checked_sub(b'0').filter(|d| *d < 4)? as u32;
            x = (x << 1) | (digit & 1);
            y = (y << 1) | (digit >> 1);
        }
        Some(Self {
            level: key.len() as u8,
            x,
            y,
        })
    }

    /// The cell's area on the sphere of [`EARTH_RADIUS_M`], square metres:
    /// `R² · Δλ · (sin φ_max − sin φ_min)`.
    pub fn area_m2(&self) -> f64 {
        self.bounds().area_m2()
    }

    /// The side of the square of the cell's area, metres: the "cell side" of the tolerances
    /// and of the profile.
    pub fn side_m(&self) -> f64 {
        self.area_m2().sqrt()
    }
}

impl Bounds {
    /// The box's area on the sphere of [`EARTH_RADIUS_M`], square metres.
    pub fn area_m2(&self) -> f64 {
        let d_lon = (self.max_lon - self.min_lon).to_radians();
        let band = self.max_lat.to_radians().sin() - self.min_lat.to_radians().sin();
        EARTH_RADIUS_M * EARTH_RADIUS_M * d_lon * band
    }

    /// The side of the square of the box's area, metres.
    pub fn side_m(&self) -> f64 {
        self.area_m2().max(0.0).sqrt()
    }

    /// Whether `(lat, lon)` lies in the box, edges included.
    pub fn contains(&self, lat: f64, lon: f64) -> bool {
        (self.min_lat..=self.max_lat).contains(&lat) && (self.min_lon..=self.max_lon).contains(&lon)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn morton_round_trips_and_prefixes_are_coarser_cells() {
        let (x, y) = finest_cell(48.8584, 2.2945).unwrap();
        let code = morton(x, y);
        for level in 0..=MAX_LEVEL {
            let cell = Cell::of_code(code, level);
            assert_eq!(cell, Cell::of_position(48.8584, 2.2945, level).unwrap());
            let mut key = String::new();
            cell.write_quadkey(&mut key);
            assert_eq!(Cell::from_quadkey(&key), Some(cell));
        }
    }

    #[test]
    fn hemisphere_areas_sum_to_the_sphere() {
        // 4πR² over the four level-1 cells
        let total: f64 = (0..2)
            .flat_map(|x| (0..2).map(move |y| Cell { level: 1, x, y }.area_m2()))
            .sum();
        let sphere = 4.0 * std::f64::consts::PI * EARTH_RADIUS_M * EARTH_RADIUS_M;
        assert!((total - sphere).abs() / sphere < 1e-12);
    }
}
