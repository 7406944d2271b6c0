// pxl::addons: modules, named tensors, variable factories and graph helpers. The umbrella header.
#pragma once

#include "pxl/addons/autodiff.hpp"
#include "pxl/addons/dot_tree.hpp"
#include "pxl/addons/graph_cache.hpp"
#include "pxl/addons/graph_with_named_args.hpp"
#include "pxl/addons/init.hpp"
#include "pxl/addons/layers/linear.hpp"
#include "pxl/addons/module.hpp"
#include "pxl/addons/module_list.hpp"
#include "pxl/addons/named_tensors.hpp"
#include "pxl/addons/variable_factory.hpp"
