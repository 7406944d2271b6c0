// The main job's flags as the Trainer's settings (settings.cpp).
#pragma once

#include "command_line.hpp"

#include "pxl/addons/training/trainer.hpp"
#include "pxl/emu/target.hpp"

#include <cstdint>

namespace mnist {

/// The model --model names, in the pipeline stages --pipeline-stages and --device-mapping
/// give it, as the Trainer that trains it.
pxl::addons::Trainer make_trainer(const Options& o);

/// The IPUs the pipeline's stages use: --device-mapping's largest plus one, else one per stage.
std::int64_t pipeline_ipus(const Options& o);

/// The Trainer's settings for the flags; pxl's ValueError (or DTypeError) naming the flag for
/// a bad value or combination.
pxl::addons::CompileOptions compile_options(const Options& o);

/// The emu::Target --target names (ipu2 unless given), with the pipeline's IPUs.
pxl::emu::Target parse_target(const Options& o);

} // namespace mnist
