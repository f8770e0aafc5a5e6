//! The set-valued variables (`GPUTRACE_MPI_ENABLE_GROUPS`,
//! `GPUTRACE_CUDA_ENABLE`, `GPUTRACE_NCCL_ENABLE`): each set's members are
//! one enum, declared once with [`set_members!`](crate::set_members) in
//! [`vars`](crate::vars), together with the set's aliases (`default`,
//! `all`, `none`, ...). The parser, the producers (which test membership
//! with [`EnabledSet::contains`]), `gputrace info config-vars` and
//! `docs/configuration.md` all read that one declaration, so a misspelt
//! member does not compile.

use std::fmt;
use std::marker::PhantomData;

/// A member of a set-valued variable: an enum declared with
/// [`set_members!`](crate::set_members).
pub trait SetMember: Copy + Eq + fmt::Debug + 'static {
    /// The variable this set is the value of.
    const VARIABLE: &'static str;
    /// Every member, in declaration order; bit `i` of a set is `ALL[i]`.
    const ALL: &'static [Self];
    /// Names, help and aliases, for the parser and the listings.
    const SPEC: SetSpec;
    /// The name in the variable's value.
    fn name(self) -> &'static str;
    /// One line on what the member records.
    fn help(self) -> &'static str;
    /// The member's bit in a set.
    fn bit(self) -> u64;
}

/// What the table, the parser and the listings know of a set, without
/// its enum type: the members (bit `i` is `members[i]`) and the aliases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetSpec {
    pub members: &'static [MemberDoc],
    pub aliases: &'static [Alias],
}

/// A member's name and help.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberDoc {
    pub name: &'static str,
    pub help: &'static str,
}

/// A name standing for several members (`default`, `all`), or for none
/// (`none`, `no`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alias {
    pub name: &'static str,
    pub help: &'static str,
    /// The members it stands for, as bits.
    pub mask: u64,
}

impl SetSpec {
    /// Every name the variable accepts, members first, then aliases, with
    /// its help: the order of the listings and of "allowed:".
    pub fn values(&self) -> impl Iterator<Item = (&'static str, &'static str)> {
        let members = self.members.iter().map(|m| (m.name, m.help));
        members.chain(self.aliases.iter().map(|a| (a.name, a.help)))
    }

    /// The alias that records nothing, as messages name it.
    pub fn nothing(&self) -> &'static str {
        self.aliases.iter().find(|a| a.mask == 0).map_or("none", |a| a.name)
    }

    /// The bits a name (member or alias, any case) stands for, and whether
    /// it is an alias for nothing.
    fn lookup(&self, word: &str) -> Option<(u64, bool)> {
        let lower = word.to_ascii_lowercase();
        if let Some(i) = self.members.iter().position(|m| m.name == lower) {
            return Some((1 << i, false));
        }
        self.aliases.iter().find(|a| a.name == lower).map(|a| (a.mask, a.mask == 0))
    }
}

/// Why a set-valued variable was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetProblem {
    /// No name at all (`""`, `","`): it would silently record nothing.
    Empty,
    /// A name that is not a member or alias.
    Unknown(String),
    /// An alias for nothing (`none`, `no`) with something to record.
    Contradiction { nothing: String, something: String },
}

/// Parses a set: names separated by commas or spaces, any case. Refused:
/// no name at all, an unknown name (the first), and an alias for nothing
/// (`none`, `no`) together with a name that records something
/// (`none,p2p`). Returns the members' bits.
pub fn parse_set(text: &str, spec: &SetSpec) -> Result<u64, SetProblem> {
    let mut bits = 0;
    let mut nothing: Option<&str> = None;
    let mut something: Option<&str> = None;
    for word in text.split(|c: char| c == ',' || c.is_whitespace()).filter(|w| !w.is_empty()) {
        let (mask, is_nothing) = spec.lookup(word).ok_or_else(|| SetProblem::Unknown(word.to_string()))?;
        if is_nothing {
            nothing.get_or_insert(word);
        } else {
            something.get_or_insert(word);
        }
        bits |= mask;
    }
    match (nothing, something) {
        (None, None) => Err(SetProblem::Empty),
        (Some(n), Some(s)) => Err(SetProblem::Contradiction { nothing: n.to_string(), something: s.to_string() }),
        _ => Ok(bits),
    }
}

/// A parsed set-valued variable: the members enabled, aliases expanded.
pub struct EnabledSet<M> {
    bits: u64,
    member: PhantomData<M>,
}

impl<M: SetMember> EnabledSet<M> {
    /// No member.
    pub const EMPTY: EnabledSet<M> = EnabledSet { bits: 0, member: PhantomData };

    /// The set of `members`.
    pub fn of(members: &[M]) -> Self {
        Self::from_bits(members.iter().fold(0, |bits, m| bits | m.bit()))
    }

    /// Parses a value of `M`'s variable (see [`parse_set`]).
    pub fn parse(text: &str) -> Result<Self, SetProblem> {
        parse_set(text, &M::SPEC).map(Self::from_bits)
    }

    /// The set of the bits `bits` (bits of no member are dropped).
    pub fn from_bits(bits: u64) -> Self {
        let all = M::ALL.iter().fold(0, |b, m| b | m.bit());
        EnabledSet { bits: bits & all, member: PhantomData }
    }

    pub fn contains(&self, member: M) -> bool {
        self.bits & member.bit() != 0
    }

    pub fn is_empty(&self) -> bool {
        self.bits == 0
    }

    /// The members, in declaration order.
    pub fn iter(&self) -> impl Iterator<Item = M> + '_ {
        M::ALL.iter().copied().filter(|m| self.contains(*m))
    }

    /// The members' bits: bit `i` is `M::ALL[i]`.
    pub fn bits(&self) -> u64 {
        self.bits
    }
}

impl<M> Clone for EnabledSet<M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M> Copy for EnabledSet<M> {}

impl<M> PartialEq for EnabledSet<M> {
    fn eq(&self, other: &Self) -> bool {
        self.bits == other.bits
    }
}

impl<M> Eq for EnabledSet<M> {}

impl<M: SetMember> Default for EnabledSet<M> {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<M: SetMember> fmt::Debug for EnabledSet<M> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter().map(M::name)).finish()
    }
}

/// Declares the members of a set-valued variable as an enum, and its
/// aliases, once:
///
/// ```
/// config::set_members! {
///     /// What a made-up producer records.
///     pub enum Demo for "GPUTRACE_DEMO_ENABLE" {
///         Calls = "calls": "API calls",
///         Kernels = "kernels": "kernels",
///     }
///     aliases {
///         "default": "calls" => &[Calls],
///         "all": "everything" => Demo::ALL,
///         "none": "nothing" => &[],
///     }
/// }
/// use config::{EnabledSet, SetMember};
/// let set = EnabledSet::<Demo>::parse("default,kernels").unwrap();
/// assert!(set.contains(Demo::Calls) && set.contains(Demo::Kernels));
/// assert_eq!(Demo::from_name("kernels"), Some(Demo::Kernels));
/// ```
///
/// Each alias's expansion is an expression of type `&[Enum]` in which the
/// members are in scope by their bare names. The enum gets `ALL`, `name`,
/// `help`, `bit` and `from_name`, and implements [`SetMember`].
#[macro_export]
macro_rules! set_members {
    (
        $(#[$meta:meta])*
        $vis:vis enum $Enum:ident for $variable:literal {
            $( $Variant:ident = $name:literal : $help:literal ),+ $(,)?
        }
        aliases {
            $( $alias:literal : $alias_help:literal => $expands:expr ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        $vis enum $Enum {
            $( #[doc = $help] $Variant, )+
        }

        impl $Enum {
            /// Every member, in declaration order.
            pub const ALL: &'static [$Enum] = &[$($Enum::$Variant),+];

            /// The name in the variable's value.
            pub const fn name(self) -> &'static str {
                match self {
                    $( $Enum::$Variant => $name, )+
                }
            }

            /// One line on what the member records.
            pub const fn help(self) -> &'static str {
                match self {
                    $( $Enum::$Variant => $help, )+
                }
            }

            /// The member's bit in a set.
            #[inline]
            pub const fn bit(self) -> u64 {
                1 << self as u8
            }

            /// The member named `name` (exactly, lower case).
            pub fn from_name(name: &str) -> Option<$Enum> {
                match name {
                    $( $name => Some($Enum::$Variant), )+
                    _ => None,
                }
            }

            const fn mask(members: &[$Enum]) -> u64 {
                let mut bits = 0;
                let mut i = 0;
                while i < members.len() {
                    bits |= members[i].bit();
                    i += 1;
                }
                bits
            }
        }

        const _: () = assert!($Enum::ALL.len() <= 64, "a set has at most 64 members");

        impl $crate::SetMember for $Enum {
            const VARIABLE: &'static str = $variable;
            const ALL: &'static [$Enum] = $Enum::ALL;
            const SPEC: $crate::SetSpec = $crate::SetSpec {
                members: &[$( $crate::MemberDoc { name: $name, help: $help } ),+],
                aliases: &[$(
                    $crate::Alias {
                        name: $alias,
                        help: $alias_help,
                        mask: {
                            #[allow(unused_imports)]
                            use $Enum::*;
                            $Enum::mask($expands)
                        },
                    }
                ),+],
            };
            fn name(self) -> &'static str {
                $Enum::name(self)
            }
            fn help(self) -> &'static str {
                $Enum::help(self)
            }
            fn bit(self) -> u64 {
                $Enum::bit(self)
            }
        }

        impl ::std::fmt::Display for $Enum {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use crate::settings::tests::pairs;
    use crate::{Config, CudaSource, MpiGroup, NcclLevel, VARS, VarType, vars};

    use super::*;

    /// One set's enum against the table, the parser and the listing.
    fn members_round_trip<M: SetMember + std::fmt::Display>() {
        let var = vars::find(M::VARIABLE).unwrap_or_else(|| panic!("{} is not in the table", M::VARIABLE));
        assert_eq!(var.ty, VarType::Set(M::SPEC), "{}: the table's set is the enum's", M::VARIABLE);
        assert_eq!(M::ALL.len(), M::SPEC.members.len());
        for (i, &m) in M::ALL.iter().enumerate() {
            // The listing (info config-vars, the docs) shows the enum's names.
            assert_eq!((M::SPEC.members[i].name, M::SPEC.members[i].help), (m.name(), m.help()));
            assert_eq!(m.bit(), 1 << i);
            assert_eq!(m.to_string(), m.name());
            // Parsed alone, in capitals, and through the variable.
            assert_eq!(EnabledSet::<M>::parse(m.name()), Ok(EnabledSet::of(&[m])), "{}", m.name());
            assert_eq!(EnabledSet::<M>::parse(&m.name().to_uppercase()), Ok(EnabledSet::of(&[m])));
            let c = Config::from_pairs(&pairs(&[(M::VARIABLE, m.name())])).unwrap();
            let parsed = match M::VARIABLE {
                "GPUTRACE_MPI_ENABLE_GROUPS" => c.mpi_groups.bits(),
                "GPUTRACE_CUDA_ENABLE" => c.cuda_enable.bits(),
                "GPUTRACE_NCCL_ENABLE" => c.nccl_enable.bits(),
                other => panic!("{other}: no field"),
            };
            assert_eq!(parsed, m.bit(), "{}={}", M::VARIABLE, m.name());
            assert_eq!(EnabledSet::<M>::of(&[m]).iter().collect::<Vec<_>>(), [m]);
        }
        // Names: lower case, no list separator (a hyphen inside joins
        // words: `runtime-all`), none twice (members and aliases).
        let names: Vec<&str> = M::SPEC.values().map(|(name, _)| name).collect();
        for name in &names {
            assert!(
                !name.is_empty()
                    && !name.starts_with('-')
                    && !name.ends_with('-')
                    && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{name}"
            );
            assert_eq!(names.iter().filter(|n| *n == name).count(), 1, "{name} twice");
        }
        // Every name is allowed, in the listing's order, in the message.
        let err = Config::from_pairs(&pairs(&[(M::VARIABLE, "bogus")])).unwrap_err()[0].to_string();
        assert!(err.ends_with(&format!("; allowed: {}", names.join(", "))), "{err}");
        // The default parses to what its alias stands for.
        let default = M::SPEC.aliases.iter().find(|a| a.name == "default").unwrap();
        assert_eq!(EnabledSet::<M>::parse(var.default).unwrap().bits(), default.mask);
    }

    #[test]
    fn every_member_round_trips_through_parse_and_the_listing() {
        members_round_trip::<MpiGroup>();
        members_round_trip::<CudaSource>();
        members_round_trip::<NcclLevel>();
        // And no other set-valued variable exists without an enum.
        let sets: Vec<&str> = VARS.iter().filter(|v| matches!(v.ty, VarType::Set(_))).map(|v| v.name).collect();
        assert_eq!(sets, [MpiGroup::VARIABLE, CudaSource::VARIABLE, NcclLevel::VARIABLE]);
    }

    /// The names and expansions are those of the string tables the enums
    /// replaced: parsing is unchanged.
    #[test]
    fn sets_accept_what_they_accepted_before() {
        fn names<M: SetMember>(text: &str) -> String {
            EnabledSet::<M>::parse(text).unwrap().iter().map(M::name).collect::<Vec<_>>().join(",")
        }
        fn allowed<M: SetMember>() -> String {
            M::SPEC.values().map(|(name, _)| name).collect::<Vec<_>>().join(",")
        }
        assert_eq!(
            allowed::<MpiGroup>(),
            "cg,coll,env,err,ext,io,misc,perf,p2p,rma,spawn,topo,type,xnonblock,xreqtest,default,all,none,no"
        );
        assert_eq!(names::<MpiGroup>("default"), "cg,coll,env,io,p2p,rma,topo,xnonblock");
        assert_eq!(
            names::<MpiGroup>("all"),
            "cg,coll,env,err,ext,io,misc,perf,p2p,rma,spawn,topo,type,xnonblock,xreqtest"
        );
        assert_eq!(
            allowed::<CudaSource>(),
            "driver,runtime,runtime-all,kernel,memcpy,memset,peer,sync,nvlink,graph,memory,uvm,default,yes,all,no,none"
        );
        assert_eq!(names::<CudaSource>("default,graph"), "runtime,kernel,memcpy,memset,peer,nvlink,graph");
        for default in ["default", "yes"] {
            assert_eq!(names::<CudaSource>(default), "runtime,kernel,memcpy,memset,peer,nvlink");
        }
        assert_eq!(
            names::<CudaSource>("all"),
            "driver,runtime,runtime-all,kernel,memcpy,memset,peer,sync,nvlink,memory,uvm"
        );
        assert_eq!(names::<CudaSource>("default,driver"), "driver,runtime,kernel,memcpy,memset,peer,nvlink");
        assert_eq!(allowed::<NcclLevel>(), "group,coll,p2p,proxy,kernel,default,yes,all,no,none");
        assert_eq!(names::<NcclLevel>("default"), "group,coll,p2p");
        assert_eq!(names::<NcclLevel>("YES"), "group,coll,p2p");
        assert_eq!(names::<NcclLevel>("all"), "group,coll,p2p,proxy,kernel");
        for nothing in ["no", "none", "None"] {
            assert_eq!(names::<CudaSource>(nothing), "");
            assert_eq!(names::<NcclLevel>(nothing), "");
            assert_eq!(names::<MpiGroup>(nothing), "");
        }
        assert_eq!(MpiGroup::SPEC.nothing(), "none");
        assert_eq!(CudaSource::SPEC.nothing(), "no");
        assert_eq!(NcclLevel::SPEC.nothing(), "no");
    }
}
