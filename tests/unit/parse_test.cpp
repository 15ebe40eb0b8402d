// SPDX-License-Identifier: GPL-2.0-only
// Parser: AST structure for the seed document's commands, and error goldens
// in the kernel selftests' inline-caret notation ('^' marks the byte the
// caret must point at; it is removed before parsing).
#include <gtest/gtest.h>

#include "histd/parse.h"
#include "test_support.h"

namespace histd::parse {
namespace {

using histd::testing::parse_ok;
void expect_error(const std::string& marked, ErrorCode code) { histd::testing::expect_parse_error(marked, code); }

std::vector<std::string> names(const std::vector<FieldRef>& fields) {
  std::vector<std::string> out;
  for (const auto& f : fields) out.push_back(f.name);
  return out;
}

TEST(Parse, SeedKmallocCommands) {
  HistCommand c = parse_ok("hist:key=call_site:val=bytes_req");
  EXPECT_EQ(names(c.keys), std::vector<std::string>{"call_site"});
  EXPECT_EQ(names(c.vals), std::vector<std::string>{"bytes_req"});
  EXPECT_EQ(c.keys[0].span, (Span{9, 18}));
  EXPECT_FALSE(c.remove);
  EXPECT_EQ(c.command, "hist:key=call_site:val=bytes_req");

  c = parse_ok("hist:keys=call_site.sym:values=bytes_req,bytes_alloc:sort=bytes_alloc.descending");
  ASSERT_EQ(c.keys[0].modifiers.size(), 1u);
  EXPECT_EQ(c.keys[0].modifiers[0].kind, Modifier::Sym);
  EXPECT_EQ(names(c.vals), (std::vector<std::string>{"bytes_req", "bytes_alloc"}));
  ASSERT_EQ(c.sort.size(), 1u);
  EXPECT_EQ(c.sort[0].name, "bytes_alloc");
  EXPECT_TRUE(c.sort[0].descending);

  c = parse_ok("hist:key=call_site.sym-offset:val=bytes_req:sort=bytes_req.descending");
  EXPECT_EQ(c.keys[0].modifiers[0].kind, Modifier::SymOffset);
  EXPECT_EQ(c.keys[0].modifiers[0].span, (Span{19, 29}));

  c = parse_ok("hist:keys=stacktrace:values=bytes_req,bytes_alloc:sort=bytes_alloc");
  EXPECT_EQ(c.keys[0].name, "stacktrace");
  EXPECT_FALSE(c.sort[0].descending);
}

TEST(Parse, EveryModifier) {
  HistCommand c = parse_ok("hist:keys=a.hex,b.execname,c.syscall:vals=d.percent,e.graph");
  EXPECT_EQ(c.keys[0].modifiers[0].kind, Modifier::Hex);
  EXPECT_EQ(c.keys[1].modifiers[0].kind, Modifier::Execname);
  EXPECT_EQ(c.keys[2].modifiers[0].kind, Modifier::Syscall);
  EXPECT_EQ(c.vals[0].modifiers[0].kind, Modifier::Percent);
  EXPECT_EQ(c.vals[1].modifiers[0].kind, Modifier::Graph);
  c = parse_ok("hist:keys=a.log2,b.buckets=0x10,c.bucket=5,common_timestamp.usecs,d.stacktrace");
  EXPECT_EQ(c.keys[0].modifiers[0].kind, Modifier::Log2);
  EXPECT_EQ(c.keys[1].modifiers[0].kind, Modifier::Buckets);
  EXPECT_EQ(c.keys[1].modifiers[0].buckets, 16u);
  EXPECT_EQ(c.keys[2].modifiers[0].buckets, 5u);
  EXPECT_EQ(c.keys[3].modifiers[0].kind, Modifier::Usecs);
  EXPECT_EQ(c.keys[4].modifiers[0].kind, Modifier::Stacktrace);
  for (Modifier m : {Modifier::Hex, Modifier::SymOffset, Modifier::Buckets, Modifier::Graph})
    EXPECT_FALSE(modifier_name(m).empty());
  EXPECT_EQ(modifier_name(Modifier::SymOffset), "sym-offset");
}

TEST(Parse, AttributesInAnyOrder) {
  HistCommand c = parse_ok("hist:size=0x100:pause:name=foo:sort=b,hitcount:vals=b:keys=a:nohitcount");
  EXPECT_EQ(c.size, 256u);
  EXPECT_EQ(c.control, Control::Pause);
  EXPECT_EQ(c.name, "foo");
  EXPECT_EQ(c.sort.size(), 2u);
  EXPECT_TRUE(c.nohitcount);
  EXPECT_EQ(parse_ok("hist:keys=a:cont").control, Control::Continue);
  EXPECT_EQ(parse_ok("hist:keys=a:continue").control, Control::Continue);
  EXPECT_EQ(parse_ok("hist:keys=a:clear").control, Control::Clear);
  EXPECT_TRUE(parse_ok("hist:keys=a:NOHC").nohitcount);
  EXPECT_EQ(parse_ok("hist:keys=a:size=010").size, 8u);  // base 0: octal
}

TEST(Parse, RemovalWhiteSpaceAndNewline) {
  HistCommand c = parse_ok("  !hist:keys=a if a == 1\n");
  EXPECT_TRUE(c.remove);
  EXPECT_EQ(c.command, "hist:keys=a if a == 1");
  ASSERT_TRUE(c.filter);
  EXPECT_EQ(c.filter->text, "a == 1");
  EXPECT_EQ(c.filter->span, (Span{15, 21}));
}

TEST(Parse, FilterSplitsAtTheFirstIfBetweenBlanks) {
  // "if" inside a name or a value is not the keyword.
  HistCommand c = parse_ok("hist:keys=iff if diff == 1 && gif ~ \"if\"");
  EXPECT_EQ(c.keys[0].name, "iff");
  ASSERT_TRUE(c.filter);
  EXPECT_EQ(c.filter->text, "diff == 1 && gif ~ \"if\"");
}

const FilterNode& node(const Filter& f, int i) { return f.nodes.at(static_cast<size_t>(i)); }

TEST(Filter, PrecedenceAndNesting) {
  auto f = parse_filter("a == 1 && b != 2 || !(c < 3 || d >= -4)", 0, "");
  ASSERT_TRUE(f.ok());
  const FilterNode& root = node(*f, f->root);
  EXPECT_EQ(root.kind, FilterNode::Kind::Or);
  EXPECT_EQ(node(*f, root.lhs).kind, FilterNode::Kind::And);
  const FilterNode& neg = node(*f, root.rhs);
  EXPECT_EQ(neg.kind, FilterNode::Kind::Not);
  const FilterNode& inner = node(*f, neg.lhs);
  EXPECT_EQ(inner.kind, FilterNode::Kind::Or);
  const Predicate& d = node(*f, inner.rhs).predicate;
  EXPECT_EQ(d.field.name, "d");
  EXPECT_EQ(d.op, CompareOp::Ge);
  EXPECT_TRUE(d.value.negative);
  EXPECT_EQ(d.value.number, static_cast<uint64_t>(-4));
}

TEST(Filter, OperatorsAndValues) {
  struct Case {
    const char* text;
    CompareOp op;
    Literal::Kind kind;
    const char* value;
  };
  for (const Case& c :
       std::vector<Case>{{"x == 0x1f", CompareOp::Eq, Literal::Kind::Number, "0x1f"},
                         {"x != 7", CompareOp::Ne, Literal::Kind::Number, "7"},
                         {"x < 7", CompareOp::Lt, Literal::Kind::Number, "7"},
                         {"x <= 7", CompareOp::Le, Literal::Kind::Number, "7"},
                         {"x > 7", CompareOp::Gt, Literal::Kind::Number, "7"},
                         {"x>=7", CompareOp::Ge, Literal::Kind::Number, "7"},
                         {"x & 4", CompareOp::BitAnd, Literal::Kind::Number, "4"},
                         {"comm ~ \"ba*h\"", CompareOp::Glob, Literal::Kind::String, "ba*h"},
                         {"comm == 'a b'", CompareOp::Eq, Literal::Kind::String, "a b"},
                         {"filename==/usr/bin/wget", CompareOp::Eq, Literal::Kind::String, "/usr/bin/wget"}}) {
    auto f = parse_filter(c.text, 0, "");
    ASSERT_TRUE(f.ok()) << c.text;
    const Predicate& p = node(*f, f->root).predicate;
    EXPECT_EQ(p.op, c.op) << c.text;
    EXPECT_EQ(p.value.kind, c.kind) << c.text;
    EXPECT_EQ(p.value.text, c.value) << c.text;
  }
  auto f = parse_filter("x == 0x1f", 10, "");
  EXPECT_EQ(node(*f, f->root).predicate.value.number, 31u);
  EXPECT_EQ(node(*f, f->root).predicate.value.span, (Span{15, 19}));
  EXPECT_EQ(node(*f, f->root).predicate.op_span, (Span{12, 14}));
}

TEST(Parse, Errors) {
  expect_error("^hist", ErrorCode::MissingKeys);
  expect_error("^hist:vals=a", ErrorCode::MissingKeys);
  expect_error("hist:keys=a:^junk", ErrorCode::UnknownToken);
  expect_error("hist:keys=a:^", ErrorCode::UnknownToken);
  expect_error("hist:^keys=", ErrorCode::EmptyAssignment);
  expect_error("hist:keys=a:^vals=", ErrorCode::EmptyAssignment);
  expect_error("hist:keys=a,^,b", ErrorCode::FieldNotFound);
  expect_error("hist:keys=a.^bogus", ErrorCode::BadFieldModifier);
  expect_error("hist:keys=a.^buckets=0", ErrorCode::BadFieldModifier);
  expect_error("hist:keys=a.^", ErrorCode::BadFieldModifier);
  expect_error("hist:keys=a:^sort=", ErrorCode::EmptyAssignment);
  // Both sort-field errors sit under "sort=", as the kernel's create_sort_keys() puts them.
  expect_error("hist:keys=a:^sort=a,", ErrorCode::EmptySortField);
  expect_error("hist:keys=a:^sort=,a", ErrorCode::EmptySortField);
  expect_error("hist:keys=a:^sort=.descending", ErrorCode::EmptySortField);
  expect_error("hist:keys=a:sort=a.^up", ErrorCode::InvalidSortModifier);
  expect_error("hist:keys=a:^sort=a,b,c", ErrorCode::TooManySortFields);
  // A second field with any after it is too many before it is looked at.
  expect_error("hist:keys=a:^sort=a,b,", ErrorCode::TooManySortFields);
  expect_error("hist:keys=a:^sort=a,b.bogus,c", ErrorCode::TooManySortFields);
  expect_error("hist:keys=a:^sort=a,,c", ErrorCode::EmptySortField);
  expect_error("hist:keys=a:size=^big", ErrorCode::InvalidSize);
  expect_error("hist:keys=a:^keys=b", ErrorCode::DuplicateAttribute);
  // The kernel's errpos() finds the first "a" of the command, not the parameter.
  expect_error("hist:keys=^a:onmax($x).save(a)", ErrorCode::InvalidParam);
  expect_error("hist:keys=^'a'", ErrorCode::FieldNotFound);
  expect_error("hist:keys=a if ^)", ErrorCode::FilterTooManyClose);
  expect_error("hist:keys=a if a =^ 1", ErrorCode::FilterInvalidOp);
  expect_error("hist:keys=a if a 1^", ErrorCode::FilterInvalidOp);
  {
    // A missing value: the caret one past the end, as the kernel's.
    auto r = parse_trigger("hist:keys=a if a ==");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::FilterInvalidValue);
    EXPECT_EQ(r.error().span.begin, 20u);
  }
  expect_error("hist:keys=a if ^(a == 1", ErrorCode::FilterTooManyOpen);
  expect_error("hist:keys=a if a == 1^)", ErrorCode::FilterTooManyClose);
  expect_error("hist:keys=a if a == ^\"open", ErrorCode::FilterMissingQuote);
  expect_error("hist:keys=a if a == 1 &&^", ErrorCode::FilterInvalid);
  expect_error("hist:keys=a if a == 1 ^b", ErrorCode::FilterInvalid);
  expect_error("hist:keys=a if a.^ustring == 1", ErrorCode::Unsupported);
}

TEST(Filter, DeepNestingIsAnErrorNotAStackOverflow) {
  // Found by fuzz_trigger: thousands of '(' or '!' once overflowed the stack.
  for (char c : {'(', '!'}) {
    const std::string deep = std::string(100000, c) + "a == 1";
    auto r = parse_filter(deep, 0, "");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::FilterTooManyOpen);
  }
  std::string many = "a == 1";
  for (int i = 0; i < 2000; ++i) many += " && a == 1";
  auto r = parse_filter(many, 0, "");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::FilterTooManyPreds);
  auto long_command = parse_trigger("hist:keys=a if " + many);
  ASSERT_FALSE(long_command.ok());
  EXPECT_EQ(long_command.error().code, ErrorCode::CommandTooLong);
  EXPECT_TRUE(parse_filter(std::string(60, '(') + "a == 1" + std::string(60, ')'), 0, "").ok());
}

// A newline or NUL in a filter (or a table name) would be printed back
// verbatim (trigger file, histctl list, state file) and forge lines there:
// refused, quoted or bare, on hist and enable_hist commands, the caret at
// the byte.
TEST(Filter, NewlineOrNulIsRefusedWhereverItIs) {
  for (const char c : {'\n', '\r', '\0'}) {
    const std::string b(1, c);
    expect_error("hist:keys=a if comm == \"x^" + b + "hist:keys=b [active]\"", ErrorCode::FilterControlChar);
    expect_error("hist:keys=a if comm == 'x^" + b + "y'", ErrorCode::FilterControlChar);
    expect_error("hist:keys=a if comm == x^" + b + "y", ErrorCode::FilterControlChar);
    expect_error("hist:keys=a if a == 1^" + b + "|| a == 2", ErrorCode::FilterControlChar);
    expect_error("hist:keys=a if comm ~ \"^" + b + "*\"", ErrorCode::FilterControlChar);
    expect_error("enable_hist:a:b if comm == \"x^" + b + "\"", ErrorCode::FilterControlChar);
    EXPECT_FALSE(parse_trigger("!hist:keys=a if comm == \"x" + b + "\"").ok());
  }
  // A table name is printed back as written too.
  for (const char c : {'\n', '\r', '\0'})
    expect_error("hist:keys=a:name=x^" + std::string(1, c) + "hist:keys=b", ErrorCode::NameControlChar);
  // The newline that ends a write is not part of the command.
  EXPECT_TRUE(parse_trigger("hist:keys=a if comm == \"x\"\n").ok());
  EXPECT_TRUE(parse_trigger("enable_hist:a:b if comm == x\n").ok());
  // The refused command is logged without the line it would have forged.
  auto r = parse_trigger("hist:keys=a if comm == \"x\nhist:keys=b [active]\"");
  ASSERT_FALSE(r.ok());
  const std::string entry = format_error_log_entry("hist:s:e", r.error());
  EXPECT_EQ(entry,
            "hist:s:e: error: a filter may not hold a newline or NUL byte\n"
            "  Command: hist:keys=a if comm == \"x hist:keys=b [active]\"\n" +
                std::string(11 + 25, ' ') + "^\n");
}

TEST(Parse, NeverCrashesOnJunk) {
  const std::string alphabet("hist:keys=,.!&|()\"' if~=<>0x-ab\n\t\0", 34);
  uint64_t state = 12345;
  for (int i = 0; i < 20000; ++i) {
    std::string s = "hist:";
    const size_t len = state % 40;
    for (size_t j = 0; j < len; ++j) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      s += alphabet[(state >> 33) % alphabet.size()];
    }
    auto r = parse_trigger(s);
    if (!r) {
      EXPECT_LE(r.error().span.begin, r.error().command.size() + 1) << s;
    }
  }
}

TEST(EnableHist, ParsesTheKernelForms) {
  auto r = parse_control_trigger("enable_hist:net:netif_receive_skb if filename==/usr/bin/wget");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->kind, ControlCommand::Kind::EnableHist);
  EXPECT_TRUE(r->enables());
  EXPECT_EQ(r->system, "net");
  EXPECT_EQ(r->event, "netif_receive_skb");
  EXPECT_FALSE(r->count);
  ASSERT_TRUE(r->filter);
  r = parse_control_trigger("!disable_hist:sched:sched_switch:3");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->remove);
  EXPECT_EQ(r->kind, ControlCommand::Kind::DisableHist);
  EXPECT_EQ(r->count, 3u);
  EXPECT_EQ(parse_control_trigger("enable_hist:a:b:count=7")->count, 7u);
  EXPECT_FALSE(parse_control_trigger("enable_hist:a:b:unlimited")->count);
  expect_error("enable_hist:^", ErrorCode::SubsysNotFound);
  expect_error("enable_hist:a:^b c:1", ErrorCode::InvalidSubsysEvent);
}

TEST(ControlTriggers, ParseAsTheKernelsEventCommands) {
  using Kind = ControlCommand::Kind;
  const std::pair<const char*, Kind> simple[] = {{"traceon", Kind::TraceOn},
                                                 {"traceoff", Kind::TraceOff},
                                                 {"snapshot", Kind::Snapshot},
                                                 {"stacktrace", Kind::Stacktrace}};
  for (const auto& [name, kind] : simple) {
    auto r = parse_control_trigger(name);
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_EQ(r->kind, kind);
    EXPECT_EQ(r->name(), name);
    EXPECT_FALSE(r->has_target());
    EXPECT_FALSE(r->count);
    r = parse_control_trigger(std::string(name) + ":5 if child_pid == 0");
    ASSERT_TRUE(r.ok()) << name;
    EXPECT_EQ(r->count, 5u);
    ASSERT_TRUE(r->filter);
    // As the trigger file lists it, and back.
    EXPECT_EQ(parse_control_trigger(std::string(name) + ":count=5")->count, 5u);
    EXPECT_FALSE(parse_control_trigger(std::string(name) + ":unlimited")->count);
  }
  auto e = parse_control_trigger("!enable_event:sched:sched_switch:2");
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE(e->remove);
  EXPECT_EQ(e->kind, Kind::EnableEvent);
  EXPECT_EQ(e->system, "sched");
  EXPECT_EQ(e->event, "sched_switch");
  EXPECT_EQ(e->count, 2u);
  EXPECT_EQ(parse_control_trigger("disable_event:sched:sched_switch")->kind, Kind::DisableEvent);
  // The kernel's selftests' refusals: an unknown command, a count that is
  // no number, a missing target.
  expect_error("^snapshot+1", ErrorCode::UnknownCommand);
  expect_error("^disable_event+1", ErrorCode::UnknownCommand);
  expect_error("stacktrace:^foo", ErrorCode::InvalidCount);
  expect_error("traceon:^", ErrorCode::InvalidCount);
  expect_error("enable_event:^", ErrorCode::SubsysNotFound);
  // Routed here from the trigger file, hist commands aside.
  EXPECT_TRUE(std::holds_alternative<ControlCommand>(*parse_trigger("traceoff if common_pid == 0")));
  EXPECT_TRUE(std::holds_alternative<HistCommand>(*parse_trigger("hist:keys=common_pid")));
}

TEST(ControlTriggers, OneOfATypePerEventOrTarget) {
  auto p = [](const char* text) { return *parse_control_trigger(text); };
  EXPECT_TRUE(p("traceon").same_type(p("traceoff:3")));
  EXPECT_FALSE(p("traceon").same_type(p("snapshot")));
  EXPECT_TRUE(p("enable_event:a:b").same_type(p("disable_event:a:b if x == 1")));
  EXPECT_FALSE(p("enable_event:a:b").same_type(p("enable_event:a:c")));
  EXPECT_TRUE(p("enable_hist:a:b").same_type(p("disable_hist:a:b")));
  EXPECT_FALSE(p("enable_hist:a:b").same_type(p("enable_event:a:b")));
}

}  // namespace
}  // namespace histd::parse
