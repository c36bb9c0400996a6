"""What the models' commands share; each model's `bayes-wsc fit MODEL` is its folder's `command.py`: its
options (`add_parser`) and its run (`run`).

Those modules import only argparse at the top, so building the whole parser
stays instant; a command imports PyMC and the model when it runs. A new model
names its module in `registry.py`.
"""

from bayes_wsc.registry import MODELS

#: the models with a `bayes-wsc fit` command, in the order the command line lists them
FIT_COMMANDS = tuple(spec.name for spec in MODELS)
