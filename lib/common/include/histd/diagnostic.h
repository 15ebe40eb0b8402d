// SPDX-License-Identifier: GPL-2.0-only
// Command diagnostics: what is wrong with a user's command, and where.
//
// The code enum mirrors the kernel's hist error table (trace_events_hist.c),
// followed by the event-filter errors (trace_events_filter.c) and the cases
// where the kernel only returns -EINVAL with no text; for those histd has its
// own wording (lowercase, no trailing period). One X-macro table generates the
// enum and the texts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "histd/result.h"

namespace histd {

// Byte range [begin, end) inside the logged command ("hist:..." text).
struct Span {
  uint32_t begin = 0;
  uint32_t end = 0;
  friend bool operator==(const Span&, const Span&) = default;
};

// clang-format off
#define HISTD_ERROR_CODES(X)                                                                      \
  /* the kernel's hist error table, in its order */                                              \
  X(None, "No error")                                                                             \
  X(DuplicateVar, "Variable already defined")                                                     \
  X(VarNotUnique,                                                                                 \
    "Variable name not unique, need to use fully qualified name (subsys.event.var) for variable") \
  X(TooManyVars, "Too many variables defined")                                                    \
  X(MalformedAssignment, "Malformed assignment")                                                  \
  X(NamedMismatch, "Named hist trigger doesn't match existing named trigger (includes variables)") \
  X(TriggerEexist, "Hist trigger already exists")                                                 \
  X(TriggerEnoentClear, "Can't clear or continue a nonexistent hist trigger")                    \
  X(SetClockFail, "Couldn't set trace_clock")                                                     \
  X(BadFieldModifier, "Invalid field modifier")                                                   \
  X(TooManySubexpr, "Too many subexpressions (3 max)")                                            \
  X(TimestampMismatch, "Timestamp units in expression don't match")                               \
  X(TooManyFieldVars, "Too many field variables defined")                                         \
  X(EventFileNotFound, "Event file not found")                                                    \
  X(HistNotFound, "Matching event histogram not found")                                           \
  X(HistCreateFail, "Couldn't create histogram for field")                                        \
  X(SynthVarNotFound, "Couldn't find synthetic variable")                                         \
  X(SynthEventNotFound, "Couldn't find synthetic event")                                          \
  X(SynthTypeMismatch, "Param type doesn't match synthetic event field type")                     \
  X(SynthCountMismatch, "Param count doesn't match synthetic event field count")                  \
  X(FieldVarParseFail, "Couldn't parse field variable")                                           \
  X(VarCreateFindFail, "Couldn't create or find variable")                                        \
  X(OnxNotVar, "For onmax(x) or onchange(x), x must be a variable")                               \
  X(OnxVarNotFound, "Couldn't find onmax or onchange variable")                                   \
  X(OnxVarCreateFail, "Couldn't create onmax or onchange variable")                               \
  X(FieldVarCreateFail, "Couldn't create field variable")                                         \
  X(TooManyParams, "Too many action params")                                                      \
  X(ParamNotFound, "Couldn't find param")                                                         \
  X(InvalidParam, "Invalid action param")                                                         \
  X(ActionNotFound, "No action found")                                                            \
  X(NoSaveParams, "No params found for save()")                                                   \
  X(TooManySaveActions, "Can't have more than one save() action per hist")                        \
  X(ActionMismatch, "Handler doesn't support action")                                             \
  X(NoClosingParen, "No closing paren found")                                                     \
  X(SubsysNotFound, "Missing subsystem")                                                          \
  X(InvalidSubsysEvent, "Invalid subsystem or event name")                                        \
  X(InvalidRefKey, "Using variable references in keys not supported")                             \
  X(VarNotFound, "Couldn't find variable")                                                        \
  X(FieldNotFound, "Couldn't find field")                                                         \
  X(EmptyAssignment, "Empty assignment")                                                          \
  X(InvalidSortModifier, "Invalid sort modifier")                                                 \
  X(EmptySortField, "Empty sort field")                                                           \
  X(TooManySortFields, "Too many sort fields (Max = 2)")                                          \
  X(InvalidSortField, "Sort field must be a key or a val")                                        \
  X(InvalidStrOperand, "String type can not be an operand in expression")                        \
  X(ExpectNumber, "Expecting numeric literal")                                                    \
  X(UnaryMinusSubexpr, "Unary minus not supported in sub-expressions")                            \
  X(DivisionByZero, "Division by zero")                                                           \
  X(NeedNohcVal, "Non-hitcount value is required for 'nohitcount'")                               \
  /* the kernel's event-filter errors */                                                          \
  X(FilterInvalidOp, "Invalid operator")                                                          \
  X(FilterTooManyOpen, "Too many '('")                                                            \
  X(FilterTooManyClose, "Too few '('")                                                            \
  X(FilterMissingQuote, "Missing matching quote")                                                 \
  X(FilterOperandTooLong, "Operand too long")                                                     \
  X(FilterExpectString, "Expecting string field")                                                 \
  X(FilterExpectDigit, "Expecting numeric field")                                                 \
  X(FilterIllegalFieldOp, "Illegal operation for field type")                                     \
  X(FilterFieldNotFound, "Field not found")                                                       \
  X(FilterIllegalIntval, "Illegal integer value")                                                 \
  X(FilterInvalid, "Meaningless filter expression")                                               \
  X(FilterInvalidValue, "Invalid value (did you forget quotes)?")                                 \
  X(FilterNoFilter, "No filter found")                                                            \
  X(FilterTooManyPreds, "Too many terms in predicate expression")                                 \
  X(FilterBadSubsystem, "Couldn't find or set field in one of a subsystem's events")            \
  /* the kernel's synthetic-event errors (trace_events_synth.c) */                               \
  X(SynthBadName, "Illegal name")                                                                 \
  X(SynthInvalidCmd, "Command must be of the form: <name> field[;field] ...")                    \
  X(SynthInvalidDynCmd, "Command must be of the form: s or -:[synthetic/]<name> field[;field] ...") \
  X(SynthEventExists, "Event already exists")                                                     \
  X(SynthTooManyFields, "Too many fields")                                                        \
  X(SynthIncompleteType, "Incomplete type")                                                       \
  X(SynthInvalidType, "Invalid type")                                                             \
  X(SynthInvalidField, "Invalid field")                                                           \
  X(SynthInvalidArraySpec, "Invalid array specification")                                         \
  /* the kernel's probe-event errors (trace_probe.h), for histd's own eprobes */                \
  X(ProbeNoGroupName, "Group name is not specified")                                              \
  X(ProbeGroupTooLong, "Group name is too long")                                                  \
  X(ProbeBadGroupName, "Group name must follow the same rules as C identifiers")                  \
  X(ProbeNoEventName, "Event name is not specified")                                              \
  X(ProbeEventTooLong, "Event name is too long")                                                  \
  X(ProbeBadEventName, "Event name must follow the same rules as C identifiers")                  \
  X(ProbeEventExist, "Given group/event name is already used by another event")                  \
  X(ProbeBadVar, "Invalid $-variable specified")                                                  \
  X(ProbeBadFetchArg, "Invalid fetch argument")                                                   \
  X(ProbeBadType, "Unknown type is specified")                                                    \
  X(ProbeBadString, "String accepts only memory argument")                                        \
  X(ProbeArgNameTooLong, "Argument name is too long")                                             \
  X(ProbeNoArgName, "Argument name is not specified")                                             \
  X(ProbeBadArgName, "Argument name must follow the same rules as C identifiers")                 \
  X(ProbeUsedArgName, "This argument name is already used")                                       \
  X(ProbeNoArgBody, "No argument expression")                                                     \
  X(ProbeNoEventInfo, "This requires both group and event name to attach")                        \
  X(ProbeBadAttachEvent, "Attached event does not exist")                                         \
  X(ProbeNoEpFilter, "No filter rule after 'if'")                                                 \
  X(ProbeNeedStringType, "$comm and immediate-string only accepts string type")                  \
  /* where the kernel returns -EINVAL without a text */                                          \
  X(MissingKeys, "hist trigger needs keys=")                                                      \
  X(TooManyKeys, "too many keys (max 3)")                                                         \
  X(TooManyVals, "too many values (max 2 besides hitcount)")                                      \
  X(InvalidSize, "size must be a number from 1 to 131072")                                        \
  X(InvalidCount, "a trigger's count must be a number")                                          \
  X(UnknownToken, "unknown hist trigger attribute")                                               \
  X(UnknownCommand, "unknown trigger command")                                                    \
  X(EmptyCommand, "empty command")                                                                \
  X(DuplicateAttribute, "attribute given twice")                                                  \
  X(StringValue, "a string can not be a value")                                                   \
  X(TriggerNotFound, "no such hist trigger")                                                      \
  X(CommandTooLong, "command longer than a page (4096 bytes)")                                    \
  X(SynthBusy, "synthetic event is in use")                                                       \
  X(SynthNotFound, "no such synthetic event")                                                     \
  X(SynthCycle, "synthetic events would generate each other in a loop")                          \
  X(ProbeTooManyArgs, "too many arguments (max 128)")                                             \
  X(VarBusy, "a variable of this trigger is used by another trigger")                            \
  X(Unsupported, "not supported by histd yet")                                                   \
  X(FilterControlChar, "a filter may not hold a newline or NUL byte")                            \
  X(NameControlChar, "a table name may not hold a newline or NUL byte")                          \
  /* what the writer may not do: EPERM for addresses (kptr_restrict), EACCES for probes */       \
  X(AddressHidden, "kernel addresses are hidden from this writer")                               \
  X(ProbeNotRoot, "only root may define or remove probe events")                                 \
  /* a command refused by a system failure (compiler, verifier, state directory) */              \
  X(CommandFailed, "command failed")                                                              \
  X(StateNotSaved, "applied, but the trigger state could not be saved")                          \
  X(NotRestored, "saved trigger not restored (kept saved, retried by histctl restore)")            \
  X(StateFileUnreadable, "saved state unreadable, kept aside")                                    \
  /* the configuration directory's lines (lib/config) */                                         \
  X(ConfigLine, "expected SYSTEM:EVENT and a trigger command, or a synthetic event definition")   \
  X(ConfigNotDeclaration, "a configuration line declares a trigger")                              \
  X(ConfigDuplicate, "declared twice")                                                            \
  X(ConfigFile, "configuration file not read")                                                    \
  /* histd's own limits (EngineOptions), refused with ENOSPC */                                  \
  X(TriggerLimit, "too many triggers")                                                            \
  X(MapMemoryLimit, "hist trigger would exceed the map memory limit")                            \
  X(SyntheticLimit, "too many synthetic events")                                                  \
  X(ProgramMapLimit, "too many maps in one event's program")                                      \
  X(ChainLimit, "too many programs in one event's chain")                                        \
  X(InstanceLimit, "too many instances")
// clang-format on

enum class ErrorCode : uint16_t {
#define HISTD_ERROR_ENUM_(name, text) name,
  HISTD_ERROR_CODES(HISTD_ERROR_ENUM_)
#undef HISTD_ERROR_ENUM_
};

std::string_view error_text(ErrorCode code);
// The enum name ("FieldNotFound"), for tests and hist_debug.
std::string_view error_name(ErrorCode code);

struct Diagnostic {
  ErrorCode code = ErrorCode::None;
  Span span;            // offending token inside `command`
  std::string command;  // the logged command ("hist:..."), spans index into it
  std::string detail;   // optional extra words after the text (histd-only)

  std::string message() const;  // error_text(code) + (detail.empty() ? "" : ": " + detail)
  // `command` as logged: a newline or NUL in it (refused commands can hold
  // them) shows as a blank, so that it cannot forge lines of error_log or of
  // a hist file's "Last command:"; the caret's column stays the same.
  std::string printable_command() const;
};

// The tracefs error_log entry body without the timestamp prefix:
//   "<loc>: error: <text>\n  Command: <command>\n<11+pos spaces>^\n"
std::string format_error_log_entry(std::string_view location, const Diagnostic& d);

// Why a command failed: a diagnostic for the user's text, or a system error
// (ENOENT, EBUSY, the compiler, the verifier, the state directory).
struct CommandFailure {
  std::optional<Diagnostic> diagnostic;
  Error error;
  std::string message() const;
};

using CommandResult = Result<Unit, CommandFailure>;

// A failure that is not about the command's text (EBUSY, ENOENT, BPF, ...).
inline CommandResult system_failure(Error e) { return unexpected(CommandFailure{std::nullopt, std::move(e)}); }

}  // namespace histd
