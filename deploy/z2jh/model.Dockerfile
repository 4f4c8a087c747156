# The model server's image: the workbook image (built from binder/) plus the small model, every file pinned by hash.
#   docker build -f deploy/z2jh/model.Dockerfile --build-arg WORKBOOK=REGISTRY/agentlab-workbook:TAG -t REGISTRY/agentlab-model:TAG .
ARG WORKBOOK
FROM ${WORKBOOK}
COPY requirements-local.txt /tmp/requirements-local.txt
RUN python -m pip install --no-cache-dir --require-hashes --no-deps -r /tmp/requirements-local.txt
