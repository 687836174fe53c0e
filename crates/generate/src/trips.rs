//! The synthetic trips table: location events (pings) of devices moving in a city over a
//! week, for location cloaking (issue 36).
//!
//! - **Subjects.** Devices are numbered 1 to rows / [`EVENTS_PER_SUBJECT`] (10M rows: 100,000
//!   ids; a device has about 100–130 pings, so the table holds at least three quarters of the
//!   ids, and wraps around to device 1 if it needs more). Each device has a **home** and a **work** anchor and a few favourite **points of interest**,
//!   drawn from a generator seeded by the device alone.
//! - **Density skew.** Distances from the centre ([`CENTRE`]) are exponential: homes with a
//!   scale of [`HOME_SCALE_M`] for 60% of devices and [`SUBURB_SCALE_M`] for the rest (the
//!   suburbs); workplaces [`WORK_SCALE_M`] around the centre for 75%, else around one of four
//!   suburban business hubs; the [`POINTS_OF_INTEREST`] points of interest
//!   [`POI_SCALE_M`] around the centre, chosen by Zipf popularity (1/rank).
//! - **Day and night.** Each day from [`FIRST_DAY`] for [`DAYS`] days: a ping at home every
//!   two hours or so at night (each with probability 0.3), the morning trip to work between
//!   7:00 and 9:30 on weekdays (pings every 4–8 minutes along the way), hourly pings at work,
//!   the evening trip home from 16:30 to 19:00, sometimes through a point of interest, and
//!   an evening or weekend outing to a point of interest with probability 0.4.
//! - **Noise.** Every ping is off its true position by about [`GPS_NOISE_M`] (uniform in a
//!   square).
//!
//! Columns: `device_id` (Int64), `lat`, `lon` (Float64, WGS84 degrees), `ts` (timestamp,
//! microseconds, UTC) and `activity` (`home`, `work`, `poi`, `trip`). A device's pings are
//! in time order; rows are written device after device.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, TimestampMicrosecondArray,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use datafusion::error::Result;

use super::{BatchSource, write_table};
use datafusion_anonymity::rng::SplitMix64;

/// The city centre (latitude, longitude).
pub const CENTRE: (f64, f64) = (48.8566, 2.3522);
/// Pings per device over the week, on average (rows / this = devices).
pub const EVENTS_PER_SUBJECT: usize = 100;
/// Days generated.
pub const DAYS: i64 = 7;
/// 2024-03-04 00:00 UTC, a Monday, in microseconds since the epoch.
pub const FIRST_DAY: i64 = 1_709_510_400_000_000;
/// Scale of the distance of central homes from the centre, metres.
pub const HOME_SCALE_M: f64 = 2_500.0;
/// Scale of suburban homes, metres.
pub const SUBURB_SCALE_M: f64 = 12_000.0;
/// Scale of central workplaces, metres.
pub const WORK_SCALE_M: f64 = 1_500.0;
/// Scale of the points of interest, metres.
pub const POI_SCALE_M: f64 = 3_000.0;
/// Points of interest of the city.
pub const POINTS_OF_INTEREST: usize = 400;
/// GPS noise, metres (each coordinate off by up to this).
pub const GPS_NOISE_M: f64 = 20.0;

const HOUR: i64 = 3_600_000_000;
const MINUTE: i64 = 60_000_000;
const METRES_PER_DEGREE: f64 = 111_195.0;
const ACTIVITIES: [&str; 4] = ["home", "work", "poi", "trip"];

/// The trips table's schema; every column is non-null.
pub fn trips_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("device_id", DataType::Int64, false),
        Field::new("lat", DataType::Float64, false),
        Field::new("lon", DataType::Float64, false),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            false,
        ),
        Field::new("activity", DataType::Utf8, false),
    ]))
}

/// Writes `rows` generated pings ([`trips_schema`]) to `out` (Parquet, zstd), `seed` deciding
/// every value; a batch at a time, and `out` is the whole table or is left as it was.
pub fn write_trips(out: &std::path::Path, rows: usize, seed: u64) -> Result<()> {
    write_table(out, rows, TripsGenerator::new(seed, rows))
}

/// A point in metres east and north of the centre.
#[derive(Debug, Clone, Copy)]
struct Metres {
    east: f64,
    north: f64,
}

fn to_degrees(p: Metres) -> (f64, f64) {
    let lat = CENTRE.0 + p.north / METRES_PER_DEGREE;
    let lon = CENTRE.1 + p.east / (METRES_PER_DEGREE * CENTRE.0.to_radians().cos());
    (lat, lon)
}

/// A point at an exponential distance of scale `scale` from `around`, in a uniform direction.
fn around(around: Metres, scale: f64, rng: &mut SplitMix64) -> Metres {
    let distance = -scale * (1.0 - rng.unit()).ln();
    let angle = rng.unit() * std::f64::consts::TAU;
    Metres {
        east: around.east + distance * angle.cos(),
        north: around.north + distance * angle.sin(),
    }
}

/// One ping, before it is written.
#[derive(Debug, Clone, Copy)]
struct Ping {
    at: Metres,
    time: i64,
    activity: u8,
}

struct TripsGenerator {
    seed: u64,
    schema: SchemaRef,
    subjects: i64,
    points_of_interest: Vec<Metres>,
    /// cumulative popularity 1/rank of the points of interest
    popularity: Vec<f64>,
    next_subject: i64,
    /// pings of the current device not written yet, in reverse time order
    pending: Vec<Ping>,
    current: i64,
}

impl TripsGenerator {
    fn new(seed: u64, rows: usize) -> Self {
        let mut rng = SplitMix64(seed);
        let centre = Metres {
            east: 0.0,
            north: 0.0,
        };
        let points_of_interest = (0..POINTS_OF_INTEREST)
            .map(|_| around(centre, POI_SCALE_M, &mut rng))
            .collect();
        let popularity = super::cumulative((1..=POINTS_OF_INTEREST).map(|rank| 1.0 / rank as f64));
        Self {
            seed,
            schema: trips_schema(),
            subjects: (rows / EVENTS_PER_SUBJECT).max(1) as i64,
            points_of_interest,
            popularity,
            next_subject: 1,
            pending: Vec::new(),
            current: 0,
        }
    }

    /// The pings of the next device (wrapping around after the last one, so any number of
    /// rows can be drawn), into `pending` in reverse time order.
    fn next_device(&mut self) {
        let id = self.next_subject;
        self.next_subject = if id >= self.subjects { 1 } else { id + 1 };
        self.current = id;
        let mut rng =
            SplitMix64(SplitMix64(self.seed ^ (id as u64).wrapping_mul(0x9E37)).next_u64());
        let centre = Metres {
            east: 0.0,
            north: 0.0,
        };
        let home = if rng.unit() < 0.6 {
            around(centre, HOME_SCALE_M, &mut rng)
        } else {
            around(centre, SUBURB_SCALE_M, &mut rng)
        };
        let work = if rng.unit() < 0.75 {
            around(centre, WORK_SCALE_M, &mut rng)
        } else {
            let hub = (rng.below(4) as f64) * std::f64::consts::FRAC_PI_2 + 0.4;
            let hub = Metres {
                east: 15_000.0 * hub.cos(),
                north: 15_000.0 * hub.sin(),
            };
            around(hub, 800.0, &mut rng)
        };
        let favourites: Vec<Metres> = (0..3)
            .map(|_| self.points_of_interest[super::draw_index(&self.popularity, &mut rng)])
            .collect();
        let mut pings = std::mem::take(&mut self.pending);
        pings.clear();
        for day in 0..DAYS {
            let midnight = FIRST_DAY + day * HOUR * 24;
            let weekday = day < 5;
            // night at home
            for hour in [0, 2, 4, 6, 22] {
                if rng.unit() < 0.3 {
                    let time = midnight + hour * HOUR + (rng.unit() * HOUR as f64) as i64;
                    pings.push(Ping {
                        at: home,
                        time,
                        activity: 0,
                    });
                }
            }
            let mut now = midnight + 7 * HOUR + (rng.unit() * 2.5 * HOUR as f64) as i64;
            if weekday {
                now = trip(&mut pings, home, work, now, &mut rng);
                let leave =
                    midnight + 16 * HOUR + 30 * MINUTE + (rng.unit() * 2.5 * HOUR as f64) as i64;
                while now + HOUR < leave {
                    now += HOUR - 10 * MINUTE + (rng.unit() * 20.0 * MINUTE as f64) as i64;
                    pings.push(Ping {
                        at: work,
                        time: now,
                        activity: 1,
                    });
                }
                now = leave;
                let from = if rng.unit() < 0.25 {
                    let poi = favourites[rng.below(3) as usize];
                    now = trip(&mut pings, work, poi, now, &mut rng);
                    now += 30 * MINUTE + (rng.unit() * HOUR as f64) as i64;
                    poi
                } else {
                    work
                };
                now = trip(&mut pings, from, home, now, &mut rng);
            }
            if rng.unit() < 0.4 {
                let poi = if rng.unit() < 0.7 {
                    favourites[rng.below(3) as usize]
                } else {
                    self.points_of_interest[super::draw_index(&self.popularity, &mut rng)]
                };
                now = now.max(midnight + 18 * HOUR) + (rng.unit() * 2.0 * HOUR as f64) as i64;
                now = trip(&mut pings, home, poi, now, &mut rng);
                now += HOUR + (rng.unit() * HOUR as f64) as i64;
                trip(&mut pings, poi, home, now, &mut rng);
            }
        }
        pings.sort_by_key(|p| std::cmp::Reverse(p.time));
        for ping in &mut pings {
            ping.at.east += (rng.unit() - 0.5) * 2.0 * GPS_NOISE_M;
            ping.at.north += (rng.unit() - 0.5) * 2.0 * GPS_NOISE_M;
        }
        self.pending = pings;
    }
}

/// Pings along the straight way from `from` to `to` at 15–40 km/h, one every 4–8 minutes,
/// the last at `to` (activity `work`, `poi` or `home` by where it is); returns the arrival.
fn trip(pings: &mut Vec<Ping>, from: Metres, to: Metres, start: i64, rng: &mut SplitMix64) -> i64 {
    let distance = ((to.east - from.east).powi(2) + (to.north - from.north).powi(2)).sqrt();
    let speed = (15.0 + rng.unit() * 25.0) / 3.6; // metres per second
    let duration = (distance / speed * 1e6) as i64;
    let mut elapsed = 0;
    loop {
        elapsed += 4 * MINUTE + (rng.unit() * 4.0 * MINUTE as f64) as i64;
        if elapsed >= duration {
            break;
        }
        let share = elapsed as f64 / duration as f64;
        let at = Metres {
            east: from.east + (to.east - from.east) * share,
            north: from.north + (to.north - from.north) * share,
        };
        pings.push(Ping {
            at,
            time: start + elapsed,
            activity: 3,
        });
    }
    pings.push(Ping {
        at: to,
        time: start + duration,
        activity: 2,
    });
    start + duration
}

impl BatchSource for TripsGenerator {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&self.schema)
    }

    fn batch(&mut self, rows: usize) -> Result<RecordBatch> {
        let mut ids = Vec::with_capacity(rows);
        let mut lats = Vec::with_capacity(rows);
        let mut lons = Vec::with_capacity(rows);
        let mut times = Vec::with_capacity(rows);
        let mut activities = Vec::with_capacity(rows);
        while ids.len() < rows {
            let Some(ping) = self.pending.pop() else {
                self.next_device();
                continue;
            };
            let (lat, lon) = to_degrees(ping.at);
            ids.push(self.current);
            lats.push(lat.clamp(-90.0, 90.0));
            lons.push(lon.clamp(-180.0, 180.0));
            times.push(ping.time);
            activities.push(ACTIVITIES[ping.activity as usize]);
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(Int64Array::from(ids)),
            Arc::new(Float64Array::from(lats)),
            Arc::new(Float64Array::from(lons)),
            Arc::new(TimestampMicrosecondArray::from(times).with_timezone("UTC")),
            Arc::new(StringArray::from(activities)),
        ];
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::AsArray;
    use datafusion::arrow::datatypes::{Float64Type, Int64Type};

    #[test]
    fn same_seed_same_pings_with_skew_and_rhythm() {
        let first = TripsGenerator::new(5, 20_000).batch(20_000).unwrap();
        let again = TripsGenerator::new(5, 20_000).batch(20_000).unwrap();
        let other = TripsGenerator::new(6, 20_000).batch(20_000).unwrap();
        assert_eq!(first, again);
        assert_ne!(first, other);
        let ids = first.column(0).as_primitive::<Int64Type>();
        let distinct: std::collections::HashSet<i64> = ids.values().iter().copied().collect();
        // 20,000 rows / 100 per device; the last device may be cut short
        assert!((150..=201).contains(&distinct.len()), "{}", distinct.len());
        // density skew: far more pings within 3 km of the centre than between 10 and 13 km
        // (a ring of 11.5 times the area)
        let (lat, lon) = (
            first.column(1).as_primitive::<Float64Type>(),
            first.column(2).as_primitive::<Float64Type>(),
        );
        let distance = |i: usize| {
            let north = (lat.value(i) - CENTRE.0) * METRES_PER_DEGREE;
            let east = (lon.value(i) - CENTRE.1) * METRES_PER_DEGREE * CENTRE.0.to_radians().cos();
            (north * north + east * east).sqrt()
        };
        let centre = (0..first.num_rows())
            .filter(|&i| distance(i) < 3_000.0)
            .count();
        let ring = (0..first.num_rows())
            .filter(|&i| (10_000.0..13_000.0).contains(&distance(i)))
            .count();
        assert!(centre > 3 * ring, "centre {centre}, ring {ring}");
        // day and night: more pings from 8:00 to 20:00 than from 0:00 to 6:00 (per hour: 4x)
        let times = first
            .column(3)
            .as_primitive::<datafusion::arrow::datatypes::TimestampMicrosecondType>();
        let hour = |i: usize| (times.value(i) - FIRST_DAY).rem_euclid(24 * HOUR) / HOUR;
        let day = (0..first.num_rows())
            .filter(|&i| (8..20).contains(&hour(i)))
            .count();
        let night = (0..first.num_rows()).filter(|&i| hour(i) < 6).count();
        assert!(day > 4 * 2 * night, "day {day}, night {night}");
    }
}
