//! A `(key, owner)` pair as a map key: owned keys and borrowed lookups hash and compare
//! alike, so a lookup allocates no key.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// A `(key, owner)` pair: the map's owned keys and borrowed lookups hash and compare alike,
/// so a lookup allocates no key.
pub(crate) trait Id {
    fn pair(&self) -> (&str, &str);
}

impl Id for (String, String) {
    fn pair(&self) -> (&str, &str) {
        (&self.0, &self.1)
    }
}

impl Id for (&str, &str) {
    fn pair(&self) -> (&str, &str) {
        *self
    }
}

impl<'a> Borrow<dyn Id + 'a> for (String, String) {
    fn borrow(&self) -> &(dyn Id + 'a) {
        self
    }
}

impl Hash for dyn Id + '_ {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.pair().hash(state);
    }
}

impl PartialEq for dyn Id + '_ {
    fn eq(&self, other: &Self) -> bool {
        self.pair() == other.pair()
    }
}

impl Eq for dyn Id + '_ {}
