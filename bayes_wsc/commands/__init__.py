"""One light module per model for `bayes-wsc fit MODEL`: its options (`add_parser`) and its run (`run`).

These modules import only argparse at the top, so building the whole parser
stays instant; a command imports PyMC and the model when it runs. A new model
adds its module here.
"""

FIT_COMMANDS = ("wsc", "pcmix", "experts", "proportions", "perception")
