//! Reading a raw NCCL stream back for the tests: definitions by id and
//! events per location, with region names and attributes resolved.

#![allow(dead_code)]

pub mod builder;

use std::collections::HashMap;
use std::path::Path;

use raw::{Definition, Event, LocationKind, RawFile};

/// A stream, read back.
#[derive(Debug)]
pub struct Stream {
    pub defs: Vec<Definition>,
    pub strings: HashMap<u32, String>,
    pub regions: HashMap<u32, String>,
    pub locations: HashMap<u32, (LocationKind, String)>,
    /// (location, time, event) in file order.
    pub events: Vec<(u32, u64, Event)>,
}

/// An event with the attributes that preceded it on its location.
#[derive(Debug, Clone)]
pub struct Ev {
    pub location: u32,
    pub time: u64,
    pub event: Event,
    pub attrs: Vec<(String, Attr)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attr {
    Num(u64),
    Text(String),
}

impl Stream {
    pub fn open(path: &Path) -> Stream {
        let raw = RawFile::open(path).unwrap();
        assert!(raw.problems.is_empty(), "{:?}", raw.problems);
        let mut events = Vec::new();
        let mut buf = Vec::new();
        for c in &raw.chunks {
            raw.read_payload(c, &mut buf).unwrap();
            events.extend(RawFile::events(c, &buf).map(|(t, e)| (c.header.location, t, e)));
        }
        let mut strings = HashMap::new();
        for d in &raw.definitions {
            if let Definition::String { id, value } = d {
                strings.insert(*id, value.clone());
            }
        }
        let mut regions = HashMap::new();
        let mut locations = HashMap::new();
        for d in &raw.definitions {
            match d {
                Definition::Region { id, name, .. } => {
                    regions.insert(*id, strings[name].clone());
                }
                Definition::Location { id, kind, name } => {
                    locations.insert(*id, (*kind, strings.get(name).cloned().unwrap_or_default()));
                }
                _ => {}
            }
        }
        Stream { defs: raw.definitions, strings, regions, locations, events }
    }

    /// Events other than attributes, each with its attributes.
    pub fn with_attrs(&self) -> Vec<Ev> {
        let mut out = Vec::new();
        let mut pending: HashMap<u32, Vec<(String, Attr)>> = HashMap::new();
        for (loc, t, e) in &self.events {
            match e {
                Event::Attribute { name, value } => {
                    pending.entry(*loc).or_default().push((self.strings[name].clone(), Attr::Num(*value)))
                }
                Event::AttributeString { name, value } => pending
                    .entry(*loc)
                    .or_default()
                    .push((self.strings[name].clone(), Attr::Text(self.strings[value].clone()))),
                _ => {
                    out.push(Ev { location: *loc, time: *t, event: *e, attrs: pending.remove(loc).unwrap_or_default() })
                }
            }
        }
        out
    }

    /// The name of a region event's region.
    pub fn region_of(&self, e: &Event) -> Option<&str> {
        match e {
            Event::Enter { region } | Event::Leave { region } => self.regions.get(region).map(String::as_str),
            _ => None,
        }
    }

    /// "Enter:name" / "Leave:name" / the event's debug form, per location.
    pub fn script(&self, location: u32) -> Vec<String> {
        self.events
            .iter()
            .filter(|(l, _, _)| *l == location)
            .filter(|(_, _, e)| !matches!(e, Event::Attribute { .. } | Event::AttributeString { .. }))
            .map(|(_, _, e)| match e {
                Event::Enter { .. } => format!("Enter:{}", self.region_of(e).unwrap()),
                Event::Leave { .. } => format!("Leave:{}", self.region_of(e).unwrap()),
                other => format!("{other:?}"),
            })
            .collect()
    }

    /// The location named `name`.
    pub fn location(&self, name: &str) -> u32 {
        *self.locations.iter().find(|(_, (_, n))| n == name).unwrap_or_else(|| panic!("no location {name}")).0
    }

    pub fn nccl_comms(&self) -> Vec<(u32, u64, u32, u32, String)> {
        self.defs
            .iter()
            .filter_map(|d| match d {
                Definition::NcclComm { id, comm_hash, nranks, rank, name } => {
                    Some((*id, *comm_hash, *nranks, *rank, name.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// Enter/Leave pairs nest properly on every location, and time never
    /// goes back on one.
    pub fn check_nesting(&self) {
        let mut stacks: HashMap<u32, Vec<u32>> = HashMap::new();
        let mut last: HashMap<u32, u64> = HashMap::new();
        for (loc, t, e) in &self.events {
            let prev = last.insert(*loc, *t).unwrap_or(0);
            assert!(*t >= prev, "time goes back on location {loc}: {prev} then {t}");
            match e {
                Event::Enter { region } => stacks.entry(*loc).or_default().push(*region),
                Event::Leave { region } => {
                    let top = stacks.entry(*loc).or_default().pop();
                    assert_eq!(top, Some(*region), "unbalanced Leave of {} on {loc}", self.regions[region]);
                }
                _ => {}
            }
        }
        for (loc, s) in stacks {
            assert!(s.is_empty(), "regions left open on {loc}: {s:?}");
        }
    }
}
