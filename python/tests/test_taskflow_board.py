"""taskflow's own jobboard tests, unmodified, against our backend.

BoardTestMixin (taskflow.tests.unit.jobs.base) is the suite every taskflow
jobboard backend runs; the two cases taskflow runs only for its Redis board
(claim with expiry, same-owner re-claim) are run here by inheriting them
from taskflow's RedisJobboardTest, so their text is taskflow's too. The
board is got as a conductor gets it: through the entry point, with
taskflow.jobs.backends.fetch.
"""

import shutil
import tempfile

from taskflow import test
from taskflow.jobs import backends
from taskflow.tests.unit.jobs import base
from taskflow.tests.unit.jobs import test_redis_job

from jobboard import taskflow_backend


class JobboardBoardTest(test.TestCase, base.BoardTestMixin):
    # taskflow's Redis-only cases, run as they are (their bodies use only
    # the JobBoard contract; the Redis client is not touched).
    test_posting_claim_expiry = \
        test_redis_job.RedisJobboardTest.test_posting_claim_expiry
    test_posting_claim_same_owner = \
        test_redis_job.RedisJobboardTest.test_posting_claim_same_owner

    def close_client(self, client):
        client.close()

    def create_board(self, persistence=None):
        path = tempfile.mkdtemp(prefix="jobboard-tf-")
        self.addCleanup(shutil.rmtree, path, True)
        board = backends.fetch("test-board", {"board": "jobboard",
                                              "path": path + "/board",
                                              "create": True,
                                              "durability": "none"},
                               persistence=persistence)
        self.assertIsInstance(board, taskflow_backend.JobboardJobBoard)
        self.addCleanup(board.close)
        # The "client" whose closing the mixin checks is the board's own
        # connection to the local board.
        return board, board

    def setUp(self):
        super().setUp()
        self.client, self.board = self.create_board()
