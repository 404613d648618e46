# The types of `import ttt_lab`'s names: __init__.py loads them from ttt_lab.api on first use.
from ttt_lab.api import AuditResult as AuditResult
from ttt_lab.api import EvalResult as EvalResult
from ttt_lab.api import Export as Export
from ttt_lab.api import ReportResult as ReportResult
from ttt_lab.api import SweepResult as SweepResult
from ttt_lab.api import TrainResult as TrainResult
from ttt_lab.api import TrialRow as TrialRow
from ttt_lab.api import audit as audit
from ttt_lab.api import config_diff as config_diff
from ttt_lab.api import evaluate as evaluate
from ttt_lab.api import export as export
from ttt_lab.api import load_config as load_config
from ttt_lab.api import report as report
from ttt_lab.api import sweep as sweep
from ttt_lab.api import train as train
from ttt_lab.config.load import Loaded as Loaded
from ttt_lab.config.load import using_config_dirs as using_config_dirs
from ttt_lab.errors import TttLabError as TttLabError

__version__: str
__all__: list[str]
