// Errors raised by fp4moe's public entry points.
//
// Every entry point checks all of its arguments before it launches anything or
// writes any output byte. A refused call throws fp4moe::InvalidArgument naming
// the function, the argument and the rule that failed; nothing has been written.
#pragma once

#include <stdexcept>
#include <string>

namespace fp4moe {

/// Base of every exception fp4moe throws.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// An argument broke a documented rule. `what()` reads
/// "<function>: argument '<argument>': <rule>".
class InvalidArgument : public Error {
 public:
  InvalidArgument(std::string function, std::string argument, std::string rule)
      : Error(function + ": argument '" + argument + "': " + rule),
        function_(std::move(function)),
        argument_(std::move(argument)),
        rule_(std::move(rule)) {}

  const std::string& function() const noexcept { return function_; }
  const std::string& argument() const noexcept { return argument_; }
  const std::string& rule() const noexcept { return rule_; }

 private:
  std::string function_;
  std::string argument_;
  std::string rule_;
};

/// A CUDA runtime call failed (a launch error, an unsupported device).
class CudaError : public Error {
 public:
  CudaError(const std::string& what, int code) : Error(what), code_(code) {}
  int code() const noexcept { return code_; }

 private:
  int code_;
};

}  // namespace fp4moe
