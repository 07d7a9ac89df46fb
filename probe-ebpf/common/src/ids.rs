//! `signal_ids!`: an id enum generated from one list, so that a signal's
//! index, name and title cannot drift apart. Each entry gives the
//! variant (its index is its position: the discriminants count from 0),
//! its stable snake-case name (recordings, exports, JSON) and its title
//! (report text). The enum gets `ALL` (in list order), `COUNT`, `name()`,
//! `title()` and `from_name()`.

/// Generates the id enum; see the module comment.
#[macro_export]
macro_rules! signal_ids {
    (
        $(#[$meta:meta])*
        pub enum $enum:ident {
            $( $(#[$vmeta:meta])* $variant:ident => ($name:literal, $title:literal) ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[repr(u32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum $enum {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $enum {
            /// Every id, in index order.
            pub const ALL: [$enum; $crate::signal_ids!(@count $($variant)+)] =
                [$($enum::$variant),+];
            /// Number of ids: the size of the kernel array indexed by them.
            pub const COUNT: u32 = Self::ALL.len() as u32;

            /// The stable snake-case name.
            pub const fn name(self) -> &'static str {
                match self {
                    $($enum::$variant => $name),+
                }
            }

            /// What one value is, in words.
            pub const fn title(self) -> &'static str {
                match self {
                    $($enum::$variant => $title),+
                }
            }

            /// The id whose `name()` is `name`.
            pub fn from_name(name: &str) -> Option<$enum> {
                Self::ALL.iter().copied().find(|id| id.name() == name)
            }
        }

        // An id's index is its position in ALL (what the kernel arrays
        // are indexed by).
        const _: () = {
            let mut i = 0;
            while i < $enum::ALL.len() {
                assert!($enum::ALL[i] as usize == i);
                i += 1;
            }
        };
    };
    (@count) => { 0 };
    (@count $head:ident $($tail:ident)*) => { 1 + $crate::signal_ids!(@count $($tail)*) };
}
