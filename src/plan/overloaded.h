// Dispatch over a step's kind: std::visit(Overloaded{[](const GemmStep&) {...}, ...}, step.op).
// Each kind needs its own callable (executors list them all, with no generic catch-all), so a
// step kind added to plan::StepOp fails to compile in every dispatch that does not handle it.
#pragma once

namespace il::plan {

template <class... Fs>
struct Overloaded : Fs... {
  using Fs::operator()...;
};
template <class... Fs>
Overloaded(Fs...) -> Overloaded<Fs...>;

}  // namespace il::plan
