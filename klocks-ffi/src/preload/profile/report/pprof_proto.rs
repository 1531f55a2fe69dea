//! The messages of pprof's `profile.proto` (package `perftools.profiles`, from
//! github.com/google/pprof, `proto/profile.proto`), derived by hand with `prost` so
//! that no `protoc` runs at build time. Field names, numbers and types are the
//! schema's; its comments, shortened, say what each means. Every string is an index
//! into `Profile::string_table`, whose first entry is `""`; every id is 1-based, 0
//! meaning none. The tests decode the profile with this same file.

/// A profile: its measures, samples and the tables the samples refer to.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Profile {
    /// What each of a sample's values measures (here: contentions, delay).
    #[prost(message, repeated, tag = "1")]
    pub sample_type: Vec<ValueType>,
    #[prost(message, repeated, tag = "2")]
    pub sample: Vec<Sample>,
    #[prost(message, repeated, tag = "3")]
    pub mapping: Vec<Mapping>,
    #[prost(message, repeated, tag = "4")]
    pub location: Vec<Location>,
    #[prost(message, repeated, tag = "5")]
    pub function: Vec<Function>,
    #[prost(string, repeated, tag = "6")]
    pub string_table: Vec<String>,
    /// Frames whose function matches this regular expression are dropped (index).
    #[prost(int64, tag = "7")]
    pub drop_frames: i64,
    #[prost(int64, tag = "8")]
    pub keep_frames: i64,
    /// When the profile began (wall clock, ns since the epoch), and how long it ran.
    #[prost(int64, tag = "9")]
    pub time_nanos: i64,
    #[prost(int64, tag = "10")]
    pub duration_nanos: i64,
    /// What one event of sampling is, and how many of them a sample stands for.
    #[prost(message, optional, tag = "11")]
    pub period_type: Option<ValueType>,
    #[prost(int64, tag = "12")]
    pub period: i64,
    /// Free-form lines (indices) shown with the profile.
    #[prost(int64, repeated, tag = "13")]
    pub comment: Vec<i64>,
    /// The sample type viewers show first (index into `string_table`); 0: the last.
    #[prost(int64, tag = "14")]
    pub default_sample_type: i64,
    #[prost(int64, tag = "15")]
    pub doc_url: i64,
}

/// A measure: its type (`contentions`) and unit (`count`), both indices.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ValueType {
    #[prost(int64, tag = "1")]
    pub r#type: i64,
    #[prost(int64, tag = "2")]
    pub unit: i64,
}

/// One stack and its values, one per `Profile::sample_type`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The stack's locations, the innermost (leaf) first.
    #[prost(uint64, repeated, tag = "1")]
    pub location_id: Vec<u64>,
    #[prost(int64, repeated, tag = "2")]
    pub value: Vec<i64>,
    #[prost(message, repeated, tag = "3")]
    pub label: Vec<Label>,
}

/// A key and a string (`str`) or number (`num`, in `num_unit`) attached to a sample.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    #[prost(int64, tag = "1")]
    pub key: i64,
    #[prost(int64, tag = "2")]
    pub str: i64,
    #[prost(int64, tag = "3")]
    pub num: i64,
    #[prost(int64, tag = "4")]
    pub num_unit: i64,
}

/// A mapped range of a module: where it is in memory, from where in the file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Mapping {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub memory_start: u64,
    #[prost(uint64, tag = "3")]
    pub memory_limit: u64,
    #[prost(uint64, tag = "4")]
    pub file_offset: u64,
    /// The module's path (index).
    #[prost(int64, tag = "5")]
    pub filename: i64,
    /// A unique identifier of the module's build, e.g. its GNU build ID in hex
    /// (index).
    #[prost(int64, tag = "6")]
    pub build_id: i64,
    /// Whether its locations already carry functions, files, lines and inlined
    /// frames: a viewer then does not symbolize them again.
    #[prost(bool, tag = "7")]
    pub has_functions: bool,
    #[prost(bool, tag = "8")]
    pub has_filenames: bool,
    #[prost(bool, tag = "9")]
    pub has_line_numbers: bool,
    #[prost(bool, tag = "10")]
    pub has_inline_frames: bool,
}

/// A place in the code: an address and the source lines it stands for.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Location {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(uint64, tag = "2")]
    pub mapping_id: u64,
    #[prost(uint64, tag = "3")]
    pub address: u64,
    /// The innermost inlined function first; the last is the function whose machine
    /// code this is.
    #[prost(message, repeated, tag = "4")]
    pub line: Vec<Line>,
    #[prost(bool, tag = "5")]
    pub is_folded: bool,
}

/// A function and the line in it (0: unknown).
#[derive(Clone, PartialEq, prost::Message)]
pub struct Line {
    #[prost(uint64, tag = "1")]
    pub function_id: u64,
    #[prost(int64, tag = "2")]
    pub line: i64,
    #[prost(int64, tag = "3")]
    pub column: i64,
}

/// A function: its name as shown, as in the symbol table, and its source file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Function {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(int64, tag = "2")]
    pub name: i64,
    #[prost(int64, tag = "3")]
    pub system_name: i64,
    #[prost(int64, tag = "4")]
    pub filename: i64,
    #[prost(int64, tag = "5")]
    pub start_line: i64,
}
