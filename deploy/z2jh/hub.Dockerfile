# The hub's image: the chart's own hub image plus agentlab (the trainer service runs in the hub's pod) and the
# first-use authenticator (the version the one-machine hub was measured with). Not under constraints.txt: the hub
# image keeps its own pins of JupyterHub and its dependencies, and agentlab itself needs only jsonschema and tqdm.
#   docker build -f deploy/z2jh/hub.Dockerfile --build-arg HUB=quay.io/jupyterhub/k8s-hub:<chart version> -t REGISTRY/agentlab-hub:TAG .
ARG HUB
FROM ${HUB}
USER root
COPY . /tmp/agentlab
RUN python3 -m pip install --no-cache-dir /tmp/agentlab jupyterhub-firstuseauthenticator==1.1.1 && rm -rf /tmp/agentlab
USER 1000
