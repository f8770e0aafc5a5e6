//! The OTF2 attributes of attribute events and memory operations, one
//! definition per name in the archive whichever worker thread meets it
//! first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use otf2::AttributeRef;

/// The OTF2 attributes defined for attribute events and memory
/// operations, by (name, string-valued): one definition per key in the
/// archive, whichever thread meets it first. Each worker thread keeps its
/// own copy of the map in front of the shared one.
#[derive(Default)]
pub struct Attributes {
    local: HashMap<(String, bool), AttributeRef>,
    shared: Arc<Mutex<HashMap<(String, bool), AttributeRef>>>,
}

impl Attributes {
    /// Another worker's view of the same attributes.
    pub fn worker(&self) -> Attributes {
        Attributes { local: HashMap::new(), shared: Arc::clone(&self.shared) }
    }

    /// The attribute of `key`, defined by `define` the first time. The
    /// caller holds the definitions (and their lock) while `define` runs,
    /// so every path takes the definitions' lock before this one.
    pub(super) fn get(&mut self, key: (String, bool), define: impl FnOnce() -> AttributeRef) -> AttributeRef {
        if let Some(&a) = self.local.get(&key) {
            return a;
        }
        let a = *self.shared.lock().unwrap_or_else(PoisonError::into_inner).entry(key.clone()).or_insert_with(define);
        self.local.insert(key, a);
        a
    }
}
