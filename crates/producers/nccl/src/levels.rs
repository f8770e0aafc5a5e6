//! What `GPUTRACE_NCCL_ENABLE` asks for, and the activation mask that
//! tells NCCL which events to report.
//!
//! | level | v1–v4 | v5+ |
//! |---|---|---|
//! | `group` | Group | GroupApi |
//! | `coll` | Coll | Coll, CollApi |
//! | `p2p` | P2p | P2p, P2pApi |
//! | `proxy` | ProxyOp, ProxyStep, ProxyCtrl | the same |
//! | `kernel` | KernelCh (v3+) | KernelCh |
//!
//! On v5+ the plan-level Group event is left out of `group`: the user's
//! group is GroupApi, and NCCL reports Group anyway (as the ancestor of the
//! collective and point-to-point events) whenever `coll` or `p2p` is on.
//! NCCL keeps one mask per process, which every communicator's `init`
//! overwrites; the plugin always writes the same one.

use config::{EnabledSet, NcclLevel};

use crate::abi::event as ev;

/// The recording levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Levels {
    pub group: bool,
    pub coll: bool,
    pub p2p: bool,
    pub proxy: bool,
    pub kernel: bool,
}

impl Levels {
    pub const ALL: Levels = Levels { group: true, coll: true, p2p: true, proxy: true, kernel: true };

    pub fn from_set(set: &EnabledSet<NcclLevel>) -> Levels {
        Levels {
            group: set.contains(NcclLevel::Group),
            coll: set.contains(NcclLevel::Coll),
            p2p: set.contains(NcclLevel::P2p),
            proxy: set.contains(NcclLevel::Proxy),
            kernel: set.contains(NcclLevel::Kernel),
        }
    }

    /// The switch of `level`.
    fn switch(&mut self, level: NcclLevel) -> &mut bool {
        match level {
            NcclLevel::Group => &mut self.group,
            NcclLevel::Coll => &mut self.coll,
            NcclLevel::P2p => &mut self.p2p,
            NcclLevel::Proxy => &mut self.proxy,
            NcclLevel::Kernel => &mut self.kernel,
        }
    }

    /// Whether `level` is recorded.
    pub fn is_on(&self, level: NcclLevel) -> bool {
        match level {
            NcclLevel::Group => self.group,
            NcclLevel::Coll => self.coll,
            NcclLevel::P2p => self.p2p,
            NcclLevel::Proxy => self.proxy,
            NcclLevel::Kernel => self.kernel,
        }
    }

    /// Parses a comma-separated list of level names (as a capture file
    /// writes them); unknown names are errors.
    pub fn parse(text: &str) -> Result<Levels, String> {
        let mut l = Levels::default();
        for name in text.split(',').map(str::trim).filter(|s| !s.is_empty() && *s != "none") {
            let level = NcclLevel::from_name(name).ok_or_else(|| format!("unknown NCCL level '{name}'"))?;
            *l.switch(level) = true;
        }
        Ok(l)
    }

    /// The level names, comma-separated ("none" for none).
    pub fn names(&self) -> String {
        let names: Vec<&str> =
            NcclLevel::ALL.iter().filter(|level| self.is_on(**level)).map(|level| level.name()).collect();
        if names.is_empty() { "none".into() } else { names.join(",") }
    }

    pub fn any(&self) -> bool {
        self.group || self.coll || self.p2p || self.proxy || self.kernel
    }

    /// The activation mask for interface version `version`.
    pub fn mask(&self, version: u32) -> i32 {
        let api = version >= 5;
        let mut m = 0u64;
        if self.group {
            m |= if api { ev::GROUP_API } else { ev::GROUP };
        }
        if self.coll {
            m |= ev::COLL | if api { ev::COLL_API } else { 0 };
        }
        if self.p2p {
            m |= ev::P2P | if api { ev::P2P_API } else { 0 };
        }
        if self.proxy {
            m |= ev::PROXY_OP | ev::PROXY_STEP | ev::PROXY_CTRL;
        }
        if self.kernel && version >= 3 {
            m |= ev::KERNEL_CH;
        }
        m as i32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use config::Config;

    fn levels(value: &str) -> Levels {
        let pairs = vec![("GPUTRACE_NCCL_ENABLE".to_string(), value.to_string())];
        Levels::from_set(&Config::from_pairs(&pairs).unwrap().nccl_enable)
    }

    #[test]
    fn masks_per_config_and_version() {
        // default = group,coll,p2p
        assert_eq!(levels("default").mask(5), (ev::GROUP_API | ev::COLL | ev::COLL_API | ev::P2P | ev::P2P_API) as i32);
        assert_eq!(levels("default").mask(6), 0x702 | 0x4);
        assert_eq!(levels("default").mask(4), 0b111);
        assert_eq!(levels("default").mask(1), 0b111);
        assert_eq!(levels("all").mask(5), 0x700 | 0b111_1110);
        assert_eq!(levels("all").mask(4), 0b111_1111);
        assert_eq!(levels("all").mask(3), 0b111_1111);
        // KernelCh arrived with v3.
        assert_eq!(levels("all").mask(2), 0b11_1111);
        assert_eq!(levels("no").mask(5), 0);
        assert!(!levels("none").any());
        assert_eq!(levels("coll").mask(5), 0x202);
        assert_eq!(levels("p2p").mask(5), 0x404);
        assert_eq!(levels("group").mask(5), 0x100);
        assert_eq!(levels("group").mask(4), 0x1);
        assert_eq!(levels("proxy").mask(5), 0x38);
        assert_eq!(levels("kernel").mask(5), 0x40);
        assert_eq!(levels("kernel").mask(2), 0);
        assert_eq!(levels("coll,kernel").mask(4), 0x42);
    }

    #[test]
    fn names_round_trip() {
        for l in [Levels::ALL, Levels::default(), levels("coll,proxy")] {
            assert_eq!(Levels::parse(&l.names()).unwrap(), l);
        }
        assert!(Levels::parse("coll,bogus").is_err());
    }
}
