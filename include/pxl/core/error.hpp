// pxl::Error and its subclasses: the one channel for user mistakes.
#pragma once

#include <stdexcept>
#include <string>

namespace pxl {

/// Base of every error pxl reports for a user mistake. The message names the thing at fault,
/// what was expected and what was found.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Shapes that do not fit together (broadcasting, reshape, matmul, stream arrays, ...).
class ShapeError : public Error {
public:
  using Error::Error;
};

/// A dtype that is not the one expected or not supported by an op.
class DTypeError : public Error {
public:
  using Error::Error;
};

/// An axis, index or count out of range.
class ValueError : public Error {
public:
  using Error::Error;
};

/// A tensor or op used in the wrong graph, a missing current graph, a bad call site.
class GraphError : public Error {
public:
  using Error::Error;
};

/// Host streams fed or read inconsistently.
class StreamError : public Error {
public:
  using Error::Error;
};

/// Reading or writing a file failed or the file is malformed.
class IoError : public Error {
public:
  using Error::Error;
};

/// A session or device used in a state that does not allow the call.
class SessionError : public Error {
public:
  using Error::Error;
};

/// A compiled plan needs more device memory than the target has.
class OutOfMemoryError : public Error {
public:
  using Error::Error;
};

} // namespace pxl

/// Internal invariant check: a failure is a bug in pxl, never a user mistake.
#define PXL_ASSERT(cond)                                                                           \
  do {                                                                                             \
    if (!(cond))                                                                                   \
      ::pxl::assertion_failed(#cond, __FILE__, __LINE__);                                          \
  } while (false)

namespace pxl {
/// Reports a failed PXL_ASSERT on stderr and aborts. Out of line and exported, since the macro
/// expands in users' code too (through pxl's inline functions).
[[noreturn]] void assertion_failed(const char* cond, const char* file, int line);
} // namespace pxl
