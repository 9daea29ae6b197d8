//! Deterministic randomness for scripts: a small generator keyed by a game's seed and a step.
//!
//! A batch draws from `Random::for_step(seed, step)`, where `step` is the id the batch's history step
//! will get. The same game seed and the same step always give the same draws, on every host and
//! platform (SplitMix64, integer arithmetic only), so a scripted scenario with random loot plays the
//! same way every time, and a swipe (a new step id) rolls again. This module must not know about
//! scripts or the store.

/// A SplitMix64 generator. Copy: handlers copy it in, draw, and hand the advanced state back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Random {
    state: u64,
}

/// Why a range cannot be drawn from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the range {low}..={high} is empty: the first bound is greater than the second")]
pub struct EmptyRange {
    /// The lower bound given.
    pub low: i64,
    /// The upper bound given.
    pub high: i64,
}

impl Random {
    /// The generator of one step of a game.
    pub fn for_step(seed: u64, step: u64) -> Random {
        // Two rounds of the SplitMix64 finaliser separate neighbouring seeds and steps.
        let mut random = Random {
            state: mix(seed) ^ step.wrapping_mul(0xD6E8_FEB8_6659_FD93),
        };
        random.state = mix(random.state);
        random
    }

    /// The generator of a step made from a chat reply (sync): keyed by the reply's content key and
    /// that of the reply before it (none for the first) instead of a step id, so that applying the same
    /// reply after the same reply again (once trimming forgot its step) draws the same.
    pub fn for_reply(seed: u64, key: &[u8; 32], previous: Option<&[u8; 32]>) -> Random {
        let folded = fold(key, previous.map_or(0x5EED, |previous| fold(previous, 0)));
        Random::for_step(seed ^ folded, 0)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        mix(self.state)
    }

    /// A uniform integer in `low..=high` (both included), without modulo bias.
    pub fn range(&mut self, low: i64, high: i64) -> Result<i64, EmptyRange> {
        if low > high {
            return Err(EmptyRange { low, high });
        }
        // The width minus one fits in u64 even for the full i64 range.
        let span = high.wrapping_sub(low) as u64;
        if span == u64::MAX {
            return Ok(self.next_u64() as i64);
        }
        let count = span + 1;
        // Reject the top partial bucket so that every value has the same number of draws.
        let zone = u64::MAX - (u64::MAX % count + 1) % count;
        loop {
            let draw = self.next_u64();
            if draw <= zone {
                return Ok(low.wrapping_add((draw % count) as i64));
            }
        }
    }

    /// A uniform number in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// 32 key bytes folded into 64 bits, starting from `start`.
fn fold(key: &[u8; 32], start: u64) -> u64 {
    key.chunks_exact(8).fold(start, |folded, chunk| {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        mix(folded ^ u64::from_le_bytes(word))
    })
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_and_step_draw_the_same() {
        let mut a = Random::for_step(7, 3);
        let mut b = Random::for_step(7, 3);
        let draws_a: Vec<i64> = (0..20).map(|_| a.range(1, 6).unwrap()).collect();
        let draws_b: Vec<i64> = (0..20).map(|_| b.range(1, 6).unwrap()).collect();
        assert_eq!(draws_a, draws_b);
        let mut c = Random::for_step(7, 4);
        let draws_c: Vec<i64> = (0..20).map(|_| c.range(1, 6).unwrap()).collect();
        assert_ne!(draws_a, draws_c);
    }

    #[test]
    fn draws_stay_in_range_and_cover_it() {
        let mut random = Random::for_step(1, 1);
        let mut seen = [false; 6];
        for _ in 0..600 {
            let draw = random.range(1, 6).unwrap();
            assert!((1..=6).contains(&draw));
            seen[(draw - 1) as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(random.range(5, 5), Ok(5));
        assert!(random.range(i64::MIN, i64::MAX).is_ok());
        assert_eq!(random.range(2, 1), Err(EmptyRange { low: 2, high: 1 }));
        let unit = random.unit();
        assert!((0.0..1.0).contains(&unit));
    }

    #[test]
    fn the_generator_is_fixed() {
        // A change to the generator would change every saved game's rolls: this pins it.
        let mut random = Random::for_step(0, 1);
        let draws: Vec<i64> = (0..5).map(|_| random.range(1, 100).unwrap()).collect();
        assert_eq!(draws, PINNED);
    }

    const PINNED: [i64; 5] = [98, 11, 70, 79, 6];
}
