//! Annotations → raw stream → reader: what each NVTX call leaves behind.

use std::collections::HashMap;
use std::path::Path;

use raw::{Definition, Event, LocationKind, Paradigm, Producer, RawFile, RegionRole};
use recorder::{Recorder, RecorderOptions};

use super::*;

fn annotations(dir: &Path) -> Annotations {
    Annotations::new(Recorder::create(dir, Producer::Nvtx, RecorderOptions::default()).unwrap())
}

/// What a stream holds, resolved: every event with its location's name,
/// region names and groups, strings.
struct Read {
    /// (location name, time, event)
    events: Vec<(String, u64, Event)>,
    strings: HashMap<u32, String>,
    regions: HashMap<u32, (String, Paradigm, RegionRole, String)>,
    locations: HashMap<u32, (LocationKind, String)>,
    thread_names: Vec<(u32, String)>,
}

impl Read {
    fn of(a: Annotations) -> Read {
        a.finish(gputrace_clock::now());
        let raw = RawFile::open(a.recorder().path()).unwrap();
        assert!(raw.problems.is_empty(), "{:?}", raw.problems);
        let mut strings = HashMap::new();
        for d in &raw.definitions {
            if let Definition::String { id, value } = d {
                strings.insert(*id, value.clone());
            }
        }
        let s = |id: &u32| strings.get(id).cloned().unwrap_or_default();
        let mut regions = HashMap::new();
        let mut locations = HashMap::new();
        let mut thread_names = Vec::new();
        for d in &raw.definitions {
            match d {
                Definition::Region { id, name, paradigm, role, group, .. } => {
                    regions.insert(*id, (s(name), *paradigm, *role, s(group)));
                }
                Definition::Location { id, kind, name } => {
                    locations.insert(*id, (*kind, s(name)));
                }
                Definition::ThreadName { tid, name } => thread_names.push((*tid, name.clone())),
                _ => {}
            }
        }
        let mut events = Vec::new();
        let mut buf = Vec::new();
        for c in &raw.chunks {
            raw.read_payload(c, &mut buf).unwrap();
            let loc =
                locations.get(&c.header.location).map_or_else(String::new, |l: &(LocationKind, String)| l.1.clone());
            events.extend(RawFile::events(c, &buf).map(|(t, e)| (loc.clone(), t, e)));
        }
        Read { events, strings, regions, locations, thread_names }
    }

    /// Enter/Leave of `location` as ("+name" | "-name").
    fn sequence(&self, location: &str) -> Vec<String> {
        self.events
            .iter()
            .filter(|(l, _, _)| l == location)
            .filter_map(|(_, _, e)| match e {
                Event::Enter { region } => Some(format!("+{}", self.regions[region].0)),
                Event::Leave { region } => Some(format!("-{}", self.regions[region].0)),
                _ => None,
            })
            .collect()
    }

    fn region_named(&self, name: &str) -> Vec<&(String, Paradigm, RegionRole, String)> {
        self.regions.values().filter(|r| r.0 == name).collect()
    }
}

fn thread_location() -> String {
    recorder::identity::thread_name()
}

#[test]
fn push_and_pop_nest_on_the_calling_thread() {
    let dir = tempfile::tempdir().unwrap();
    let a = annotations(dir.path());
    assert_eq!(a.push(0, &Attributes::text("outer")), 0);
    assert_eq!(a.push(0, &Attributes::text("inner")), 1);
    assert_eq!(a.pop(0), 1);
    assert_eq!(a.push(0, &Attributes::text("inner")), 1);
    assert_eq!(a.pop(0), 1);
    assert_eq!(a.pop(0), 0);
    // Nothing open: NVTX's error value, nothing recorded.
    assert_eq!(a.pop(0), -1);
    let r = Read::of(a);
    assert_eq!(r.sequence(&thread_location()), ["+outer", "+inner", "-inner", "+inner", "-inner", "-outer"]);
    let outer = r.region_named("outer");
    assert_eq!(outer.len(), 1);
    assert_eq!((outer[0].1, outer[0].2, outer[0].3.as_str()), (Paradigm::Nvtx, RegionRole::Function, "NVTX"));
}

#[test]
fn domains_have_their_own_stacks_and_groups() {
    let dir = tempfile::tempdir().unwrap();
    let a = annotations(dir.path());
    let d = a.domain_create("solver");
    assert_ne!(d, 0);
    assert_eq!(a.domain_create("solver"), d, "the same name is the same domain");
    assert_eq!(a.push(d, &Attributes::text("step")), 0);
    assert_eq!(a.push(0, &Attributes::text("step")), 0, "levels count per domain");
    assert_eq!(a.pop(0), 0);
    assert_eq!(a.pop(d), 0);
    assert_eq!(a.pop(d), -1);
    let r = Read::of(a);
    let mut groups: Vec<&str> = r.region_named("step").iter().map(|x| x.3.as_str()).collect();
    groups.sort_unstable();
    assert_eq!(groups, ["NVTX", "NVTX domain solver"]);
    assert_eq!(r.sequence(&thread_location()), ["+step", "+step", "-step", "-step"]);
}

#[test]
fn start_end_ranges_take_lanes_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    let a = std::sync::Arc::new(annotations(dir.path()));
    let first = a.range_start(0, &Attributes::text("load"));
    let second = a.range_start(0, &Attributes::text("compute"));
    assert_ne!(first, second);
    // The first ends on another thread, after the second started: the
    // second cannot nest in it, so it is on a second lane.
    let b = std::sync::Arc::clone(&a);
    std::thread::spawn(move || b.range_end(first)).join().unwrap();
    let third = a.range_start(0, &Attributes::text("store"));
    a.range_end(second);
    a.range_end(third);
    a.range_end(third); // twice: ignored
    a.range_end(12345); // never started: ignored
    let a = std::sync::Arc::into_inner(a).unwrap();
    let r = Read::of(a);
    assert_eq!(r.sequence("NVTX ranges"), ["+load", "-load", "+store", "-store"]);
    assert_eq!(r.sequence("NVTX ranges 2"), ["+compute", "-compute"]);
    let lanes: Vec<_> =
        r.locations.values().filter(|(k, _)| matches!(k, LocationKind::Lane { gpu: false, .. })).collect();
    assert_eq!(lanes.len(), 2);
    assert_eq!(r.region_named("load")[0].2, RegionRole::Code);
    for lane in ["NVTX ranges", "NVTX ranges 2"] {
        let times: Vec<u64> = r.events.iter().filter(|(l, _, _)| l == lane).map(|(_, t, _)| *t).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{lane}: {times:?}");
    }
}

#[test]
fn a_mark_is_a_region_of_length_zero_with_its_attributes() {
    let dir = tempfile::tempdir().unwrap();
    let a = annotations(dir.path());
    a.name_category(0, 7, "I/O");
    let attrs = Attributes {
        message: Message::Text(b"checkpoint"),
        category: 7,
        color: Some(0xff00_ff00),
        payload: Payload::Unsigned(42),
        binary: None,
    };
    a.mark(0, &attrs);
    a.mark(0, &Attributes { category: 9, payload: Payload::Float(2.5), ..Attributes::text("tick") });
    a.mark(0, &Attributes { payload: Payload::Signed(-3), ..Attributes::text("tick") });
    let r = Read::of(a);
    let here = thread_location();
    let evs: Vec<&(String, u64, Event)> = r.events.iter().filter(|(l, _, _)| *l == here).collect();
    let attr = |e: &Event| match *e {
        Event::Attribute { name, value } => Some((r.strings[&name].clone(), value.to_string())),
        Event::AttributeString { name, value } => Some((r.strings[&name].clone(), r.strings[&value].clone())),
        _ => None,
    };
    let first: Vec<_> = evs[..3].iter().filter_map(|e| attr(&e.2)).collect();
    assert_eq!(
        first,
        [
            ("NVTX category".to_string(), "I/O".to_string()),
            ("NVTX color".to_string(), 0xff00_ff00u32.to_string()),
            ("NVTX payload".to_string(), "42".to_string()),
        ]
    );
    let (t_enter, t_leave) = (evs[3].1, evs[4].1);
    assert!(matches!(evs[3].2, Event::Enter { .. }) && matches!(evs[4].2, Event::Leave { .. }));
    assert_eq!(t_enter, t_leave, "a mark has no length");
    // Unnamed category: its number; a float or negative payload: text.
    let rest: Vec<_> = evs[5..].iter().filter_map(|e| attr(&e.2)).collect();
    assert_eq!(
        rest,
        [
            ("NVTX category".to_string(), "9".to_string()),
            ("NVTX payload".to_string(), "2.5".to_string()),
            ("NVTX payload".to_string(), "-3".to_string()),
        ]
    );
    assert_eq!(r.region_named("checkpoint")[0].2, RegionRole::Artificial);
    assert_eq!(r.sequence(&here), ["+checkpoint", "-checkpoint", "+tick", "-tick", "+tick", "-tick"]);
}

#[test]
fn registered_strings_name_regions_in_their_domain() {
    let dir = tempfile::tempdir().unwrap();
    let a = annotations(dir.path());
    let d = a.domain_create("io");
    let s = a.register_string(d, "read block");
    assert_ne!(s, 0);
    for _ in 0..3 {
        a.push(d, &Attributes::message(Message::Registered(s)));
        a.pop(d);
    }
    // A handle that is not ours is an unnamed annotation, not a crash.
    a.mark(0, &Attributes::message(Message::Registered(0xdead_beef)));
    let r = Read::of(a);
    let regions = r.region_named("read block");
    assert_eq!(regions.len(), 1, "one region for every use");
    assert_eq!(regions[0].3, "NVTX domain io");
    assert_eq!(r.sequence(&thread_location()).iter().filter(|s| *s == "+read block").count(), 3);
    assert_eq!(r.region_named("").len(), 1);
}

#[test]
fn thread_names_are_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let a = annotations(dir.path());
    a.name_thread(4321, "loader");
    let h = a.resource_create(0, crate::abi::RESOURCE_THREAD_NATIVE, 4322, Message::Text(b"writer"));
    assert_ne!(h, 0);
    a.resource_create(0, 0, 99, Message::Text(b"not a thread"));
    let r = Read::of(a);
    assert_eq!(r.thread_names, [(4321, "loader".to_string()), (4322, "writer".to_string())]);
}

#[test]
fn many_threads_push_and_pop_without_losing_an_event() {
    let dir = tempfile::tempdir().unwrap();
    let a = std::sync::Arc::new(annotations(dir.path()));
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let a = std::sync::Arc::clone(&a);
            std::thread::Builder::new()
                .name(format!("worker{i}"))
                .spawn(move || {
                    for n in 0..5000 {
                        a.push(0, &Attributes::text(if n % 2 == 0 { "even" } else { "odd" }));
                        let id = a.range_start(0, &Attributes::text("span"));
                        a.pop(0);
                        a.range_end(id);
                    }
                })
                .unwrap()
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let a = std::sync::Arc::into_inner(a).unwrap();
    let r = Read::of(a);
    for i in 0..4 {
        let seq = r.sequence(&format!("worker{i}"));
        assert_eq!(seq.len(), 10_000);
        assert_eq!(seq.iter().filter(|s| *s == "+even").count(), 2500);
    }
    let spans: usize =
        r.events.iter().filter(|(l, _, e)| l.starts_with("NVTX ranges") && matches!(e, Event::Leave { .. })).count();
    assert_eq!(spans, 20_000);
    let lanes = r.locations.values().filter(|(k, _)| matches!(k, LocationKind::Lane { .. })).count();
    assert!((1..=4).contains(&lanes), "{lanes} lanes for at most 4 ranges open at once");
}
