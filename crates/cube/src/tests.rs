use std::collections::BTreeMap;

use super::*;
use crate::plan::{depth_first, wide};

/// The members of a tar archive, read back by hand (name → bytes).
fn members(tar: &[u8]) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut at = 0;
    while at + 512 <= tar.len() {
        let h = &tar[at..at + 512];
        if h.iter().all(|&b| b == 0) {
            break;
        }
        let name = String::from_utf8(h[..100].iter().take_while(|&&b| b != 0).copied().collect()).unwrap();
        let size = u64::from_str_radix(std::str::from_utf8(&h[124..135]).unwrap(), 8).unwrap() as usize;
        assert_eq!(&h[257..263], b"ustar\0");
        let body = tar[at + 512..at + 512 + size].to_vec();
        out.insert(name, body);
        at += 512 + size.div_ceil(512) * 512;
    }
    // Two zero blocks end it.
    assert_eq!(tar.len(), at + 1024, "the archive ends with two zero blocks");
    out
}

/// `CUBEX.INDEX` → the row positions.
fn index(bytes: &[u8]) -> Vec<u32> {
    assert_eq!(&bytes[..11], b"CUBEX.INDEX");
    assert_eq!(u32::from_le_bytes(bytes[11..15].try_into().unwrap()), 1);
    assert_eq!(bytes[17], 1, "sparse index");
    let n = u32::from_le_bytes(bytes[18..22].try_into().unwrap()) as usize;
    assert_eq!(bytes.len(), 22 + 4 * n);
    bytes[22..].chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// `CUBEX.DATA` → the values, 8 bytes each.
fn data(bytes: &[u8]) -> Vec<u64> {
    assert_eq!(&bytes[..10], b"CUBEX.DATA");
    bytes[10..].chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
}

/// A call tree whose depth-first and wide enumerations differ:
///
/// ```text
/// main(0) ── a(1) ── c(3)
///         └─ b(2)
/// ```
///
/// depth first: main a c b; wide: main a b c.
struct Small {
    cube: Cube,
    visits: MetricId,
    time: MetricId,
    main: CnodeId,
    a: CnodeId,
    b: CnodeId,
    c: CnodeId,
    t0: LocationId,
    gpu: LocationId,
}

fn small() -> Small {
    let mut cube = Cube::new();
    cube.attribute("Creator", "test");
    let visits =
        cube.metric(Metric::new("visits", "Visits", DataType::Uint64, MetricKind::Exclusive, "occ"), None).unwrap();
    let time = cube.metric(Metric::new("time", "Time", DataType::Double, MetricKind::Inclusive, "sec"), None).unwrap();
    let r_main = cube.region(Region::new("main", "user", "function"));
    let r_a = cube.region(Region::new("a<int>", "user", "function"));
    let r_b = cube.region(Region::new("b", "mpi", "point2point"));
    let main = cube.cnode(r_main, None).unwrap();
    let a = cube.cnode(r_a, Some(main)).unwrap();
    let b = cube.cnode(r_b, Some(main)).unwrap();
    let c = cube.cnode(r_b, Some(a)).unwrap();
    let machine = cube.system_tree_node("machine", "machine", None).unwrap();
    let host = cube.system_tree_node("host & co", "node", Some(machine)).unwrap();
    // The GPU's node is defined before the process: its stream still
    // comes after the process's thread, as a node's groups precede its
    // child nodes.
    let device = cube.system_tree_node("GPU 0", "GPU", Some(host)).unwrap();
    let ctx = cube.location_group("context", 0, GroupType::Accelerator, device).unwrap();
    let gpu = cube.location("stream 7", 0, LocationType::AcceleratorStream, ctx).unwrap();
    let rank = cube.location_group("MPI Rank 0", 0, GroupType::Process, host).unwrap();
    let t0 = cube.location("Master thread", 0, LocationType::Thread, rank).unwrap();
    let _empty = cube.location_group("no locations", 1, GroupType::Process, host).unwrap();
    Small { cube, visits, time, main, a, b, c, t0, gpu }
}

fn written(cube: &Cube) -> BTreeMap<String, Vec<u8>> {
    let mut bytes = Vec::new();
    cube.write(&mut bytes).unwrap();
    members(&bytes)
}

#[test]
fn rows_follow_the_enumeration_of_their_metric_kind() {
    let mut s = small();
    let c = &mut s.cube;
    for (node, v) in [(s.main, 1u64), (s.a, 2), (s.b, 3), (s.c, 4)] {
        c.set(s.visits, node, s.t0, v).unwrap();
        c.set(s.time, node, s.t0, v as f64 / 10.0).unwrap();
    }
    c.set(s.time, s.c, s.gpu, 9.0).unwrap();
    let m = written(c);
    // Exclusive: depth first, main a c b.
    assert_eq!(index(&m["0.index"]), vec![0, 1, 2, 3]);
    // Locations: the thread (column 0), then the stream (column 1).
    assert_eq!(data(&m["0.data"]), vec![1, 0, 2, 0, 4, 0, 3, 0]);
    // Inclusive: wide, main a b c.
    assert_eq!(index(&m["1.index"]), vec![0, 1, 2, 3]);
    let time: Vec<f64> = data(&m["1.data"]).into_iter().map(f64::from_bits).collect();
    assert_eq!(time, vec![0.1, 0.0, 0.2, 0.0, 0.3, 0.0, 0.4, 9.0]);
}

#[test]
fn rows_of_zeros_are_left_out_but_an_index_is_never_empty() {
    let mut s = small();
    s.cube.set(s.visits, s.b, s.gpu, 5u64).unwrap();
    let m = written(&s.cube);
    // b is third depth first.
    assert_eq!(index(&m["0.index"]), vec![3]);
    assert_eq!(data(&m["0.data"]), vec![0, 5]);
    // Nothing was set for time: one row of zeros at the root.
    assert_eq!(index(&m["1.index"]), vec![0]);
    assert_eq!(data(&m["1.data"]), vec![0, 0]);
}

#[test]
fn the_anchor_holds_every_definition_in_the_parsers_order() {
    let s = small();
    let m = written(&s.cube);
    let anchor = String::from_utf8(m["anchor.xml"].clone()).unwrap();
    assert!(anchor.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>"), "{anchor}");
    // A GPU stream needs Cube 4.7's syntax.
    assert!(anchor.contains("<cube version=\"4.7\">"), "{anchor}");
    assert!(anchor.contains("<attr key=\"Creator\" value=\"test\"/>"));
    assert!(anchor.contains("<metric id=\"1\" type=\"INCLUSIVE\">\n<disp_name>Time</disp_name>\n<uniq_name>time</uniq_name>\n<dtype>DOUBLE</dtype>\n<uom>sec</uom>"), "{anchor}");
    assert!(anchor.contains("<name>a&lt;int&gt;</name>"), "{anchor}");
    // Nested call tree, ids depth first: main 0, a 1, c 2, b 3.
    let tree: Vec<&str> = anchor.lines().filter(|l| l.contains("cnode")).collect();
    assert_eq!(
        tree,
        [
            "<cnode id=\"0\" calleeId=\"0\">",
            "<cnode id=\"1\" calleeId=\"1\">",
            "<cnode id=\"2\" calleeId=\"2\">",
            "</cnode>",
            "</cnode>",
            "<cnode id=\"3\" calleeId=\"2\">",
            "</cnode>",
            "</cnode>"
        ]
    );
    // The process group (on the host) before the GPU node's group; the
    // empty group left out.
    let rank = anchor.find("<name>MPI Rank 0</name>").unwrap();
    let gpu = anchor.find("<name>GPU 0</name>").unwrap();
    assert!(rank < gpu, "{anchor}");
    assert!(!anchor.contains("no locations"));
    assert!(anchor.contains("<name>host &amp; co</name>"));
    assert!(
        anchor.contains("<location Id=\"1\">\n<name>stream 7</name>\n<rank>0</rank>\n<type>accelerator stream</type>")
    );
    assert!(anchor.trim_end().ends_with("</system>\n</cube>"));
}

#[test]
fn a_cube_without_gpu_locations_is_cube_4_4() {
    let mut c = Cube::new();
    let m = c.metric(Metric::new("visits", "Visits", DataType::Uint64, MetricKind::Exclusive, "occ"), None).unwrap();
    let r = c.region(Region::new("main", "user", "function"));
    let root = c.cnode(r, None).unwrap();
    let n = c.system_tree_node("machine", "machine", None).unwrap();
    let g = c.location_group("Process 0", 0, GroupType::Process, n).unwrap();
    let l = c.location("Master thread", 0, LocationType::Thread, g).unwrap();
    c.add(m, root, l, 2u64).unwrap();
    c.add(m, root, l, 3u64).unwrap();
    assert_eq!(c.get(m, root, l).unwrap(), Value::U64(5));
    let members = written(&c);
    assert!(String::from_utf8_lossy(&members["anchor.xml"]).contains("<cube version=\"4.4\">"));
}

#[test]
fn metric_children_are_nested_and_numbered_depth_first() {
    let mut c = Cube::new();
    let time = c.metric(Metric::new("time", "Time", DataType::Double, MetricKind::Inclusive, "sec"), None).unwrap();
    let visits =
        c.metric(Metric::new("visits", "Visits", DataType::Uint64, MetricKind::Exclusive, "occ"), None).unwrap();
    let mpi = c.metric(Metric::new("mpi", "MPI", DataType::Double, MetricKind::Inclusive, "sec"), Some(time)).unwrap();
    let r = c.region(Region::new("main", "user", "function"));
    let root = c.cnode(r, None).unwrap();
    let n = c.system_tree_node("machine", "machine", None).unwrap();
    let g = c.location_group("Process 0", 0, GroupType::Process, n).unwrap();
    let l = c.location("Master thread", 0, LocationType::Thread, g).unwrap();
    c.set(visits, root, l, 7u64).unwrap();
    c.set(mpi, root, l, 0.5).unwrap();
    let m = written(&c);
    let anchor = String::from_utf8(m["anchor.xml"].clone()).unwrap();
    // time 0, its child mpi 1, visits 2.
    let order: Vec<&str> = anchor.lines().filter(|l| l.starts_with("<metric ") || l == &"</metric>").collect();
    assert_eq!(
        order,
        [
            "<metric id=\"0\" type=\"INCLUSIVE\">",
            "<metric id=\"1\" type=\"INCLUSIVE\">",
            "</metric>",
            "</metric>",
            "<metric id=\"2\" type=\"EXCLUSIVE\">",
            "</metric>"
        ]
    );
    assert_eq!(data(&m["2.data"]), vec![7]);
    assert_eq!(data(&m["1.data"]), vec![0.5f64.to_bits()]);
}

#[test]
fn handles_and_types_are_checked() {
    let mut s = small();
    let wrong = s.cube.set(s.visits, s.main, s.t0, 1.5).unwrap_err();
    assert_eq!(wrong.to_string(), "metric visits holds UINT64 values, not DOUBLE");
    let mut other = Cube::new();
    let err = other.cnode(RegionId(3), None).unwrap_err();
    assert_eq!(err.to_string(), "no region 3 in this cube");
    assert!(matches!(s.cube.set(s.time, CnodeId(99), s.t0, 1.0), Err(Error::Unknown { .. })));
    assert_eq!(Cube::new().write(&mut Vec::new()).unwrap_err().to_string(), "a cube needs at least one metric");
}

#[test]
fn writing_to_a_path_is_all_or_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = small();
    s.cube.set(s.visits, s.main, s.t0, 1u64).unwrap();
    let path = dir.path().join("profile.cubex");
    let size = s.cube.write_to(&path).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), size);
    assert_eq!(size % 512, 0);
    // Over a directory: an error naming the path, nothing left beside it.
    let blocked = dir.path().join("blocked.cubex");
    std::fs::create_dir(&blocked).unwrap();
    std::fs::write(blocked.join("inside"), b"x").unwrap();
    let err = s.cube.write_to(&blocked).unwrap_err();
    assert!(err.to_string().starts_with(&format!("cannot write {}: ", blocked.display())), "{err}");
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    // Into a directory that does not exist.
    let err = s.cube.write_to(&dir.path().join("missing/profile.cubex")).unwrap_err();
    assert!(matches!(err, Error::Write { .. }), "{err}");
}

#[test]
fn text_is_escaped_for_xml() {
    assert_eq!(xml::escape("a<b> & \"c\" 'd'"), "a&lt;b&gt; &amp; &quot;c&quot; &apos;d&apos;");
    assert_eq!(xml::escape("bell\u{7}tab\t"), "bell\u{FFFD}tab\t");
}

#[test]
fn the_wide_enumeration_numbers_a_nodes_children_together() {
    // 0 ─ 1 ─ 3 ─ 5
    //   │   └ 4
    //   └ 2 ─ 6
    let children = vec![vec![1, 2], vec![3, 4], vec![6], vec![5], vec![], vec![], vec![]];
    assert_eq!(wide(&[0], &children), vec![0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(depth_first(&[0], &children), vec![0, 1, 3, 5, 4, 2, 6]);
}
