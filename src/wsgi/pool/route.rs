//! A request's route, the key admission remembers calls by (`admission`): the path's hash with
//! its id segments as one, so that what one call of a REST route taught reaches the next.

/// The route of a request, for its class: a hash of the path (query excluded) in which every
/// segment that is an id (`is_id`: digits, a UUID, a long hex string) counts as one and the
/// same, so that `/users/42` and `/users/7` are one route. A REST app's paths carry ids: keyed
/// by the raw path, each call would be a route never seen, and what one call taught (it
/// blocks, it is long) would never reach the next.
pub fn route_hash(path: &[u8]) -> u64 {
    // FNV-1a: a few ns for a typical path, and no allocation. Collisions only share a class.
    let fnv = |h: u64, b: u8| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (i, segment) in path.split(|&b| b == b'/').enumerate() {
        if i > 0 {
            h = fnv(h, b'/');
        }
        if is_id(segment) {
            h = fnv(h, 0); // no path byte is NUL (proto refuses it)
        } else {
            h = segment.iter().fold(h, |h, &b| fnv(h, b));
        }
    }
    h
}

/// A path segment that names one thing among many: all digits, a UUID (8-4-4-4-12 hex
/// digits), or at least `LONG_HEX` hex digits (a hash, an object id).
fn is_id(segment: &[u8]) -> bool {
    if segment.is_empty() {
        return false;
    }
    if segment.iter().all(u8::is_ascii_digit) {
        return true;
    }
    let uuid = segment.len() == 36
        && segment.iter().enumerate().all(|(i, &b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        });
    uuid || segment.len() >= LONG_HEX && segment.iter().all(u8::is_ascii_hexdigit)
}

/// Hex digits from which a segment is taken for an id (a 64-bit id in hex, a MongoDB
/// ObjectId's 24, a SHA's 40 or 64); shorter words made of a-f (`/cafe`, `/dead`) stay names.
const LONG_HEX: usize = 16;
